#include "report/page_style.h"

namespace sentinel::report {

const char kReportCss[] = R"CSS(
:root { --fast:#2f6fb0; --slow:#c9b79c; --tofast:#58b368; --toslow:#e08a2c; --moving:#9b59b6; --late:#d62828;
        --ink:#1d2430; --muted:#5b6573; --line:#d8dde5; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1040px; padding: 16px 24px 40px; color: var(--ink);
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
h1 { font-size: 1.5em; margin: 0.2em 0 0.1em; }
h2 { font-size: 1.15em; margin: 1.6em 0 0.4em; border-bottom: 1px solid var(--line); padding-bottom: 3px; }
p.sub, .note { color: var(--muted); font-size: 0.9em; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; background: #fafbfc; }
.card h3 { margin: 0 0 6px; font-size: 1em; }
.card p { margin: 4px 0; }
.big { font-size: 1.35em; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: 0.9em; font-variant-numeric: tabular-nums; }
th, td { text-align: right; padding: 3px 8px; border-bottom: 1px solid var(--line); }
th:first-child, td:first-child { text-align: left; }
td.notes { text-align: left; color: var(--muted); }
tr.sentinel td { font-weight: 600; }
svg.chart { width: 100%; height: auto; display: block; font-size: 11px; }
.grid { stroke: #eef0f4; } .axis, .tick-mark { stroke: #8a93a0; } .tick { fill: var(--muted); }
.axis-title { fill: var(--ink); font-size: 12px; }
.series path { fill: none; stroke-width: 1.6; } .series circle { stroke: none; }
.s-sentinel path { stroke: var(--fast); stroke-width: 2.4; } .s-sentinel circle { fill: var(--fast); }
.s-dram path { stroke: #222; stroke-dasharray: 2 3; }
.s-optimal path { stroke: #2a9d8f; stroke-dasharray: 6 3; } .s-optimal circle { fill: #2a9d8f; }
.s-baseline path { stroke: var(--toslow); } .s-baseline circle { fill: var(--toslow); }
.s-executed path { stroke: var(--moving); stroke-width: 2; }
.s-all-slow path { stroke: #999; } .s-first-touch path { stroke: #e9c46a; } .s-static-ratio path { stroke: #f4a261; }
.s-reactive-hot path { stroke: #e76f51; } .s-static-best path { stroke: #8ab17d; }
.ref line { stroke: var(--late); stroke-dasharray: 5 4; stroke-width: 1.4; } .ref text { fill: var(--late); }
.r-peak line { stroke: #777; } .r-peak text { fill: #555; }
.r-dram line { stroke: #222; } .r-dram text { fill: #222; }
.b-evict { fill: var(--toslow); } .b-prefetch { fill: var(--tofast); }
.o-fast { fill: var(--fast); } .o-slow { fill: var(--slow); } .o-tofast { fill: var(--tofast); }
.o-toslow { fill: var(--toslow); } .o-moving { fill: var(--moving); }
.m-evict { fill: #6b2d00; } .m-prefetch { fill: #0b4d1c; }
.m-late { fill: none; stroke: var(--late); stroke-width: 2; }
.obj-label { fill: var(--ink); }
ul.legend { list-style: none; padding: 0; margin: 4px 0 0; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 0.85em; }
.swatch { display: inline-block; width: 14px; height: 10px; margin-right: 5px; vertical-align: middle;
          background: currentColor; border-radius: 2px; }
.swatch.s-sentinel { color: var(--fast); } .swatch.s-dram { color: #222; } .swatch.s-optimal { color: #2a9d8f; }
.swatch.s-baseline { color: var(--toslow); } .swatch.s-executed { color: var(--moving); }
.swatch.s-all-slow { color: #999; } .swatch.s-first-touch { color: #e9c46a; } .swatch.s-static-ratio { color: #f4a261; }
.swatch.s-reactive-hot { color: #e76f51; } .swatch.s-static-best { color: #8ab17d; }
.swatch.ref { color: var(--late); height: 2px; } .swatch.r-peak { color: #777; } .swatch.r-dram { color: #222; }
.swatch.b-evict, .swatch.o-toslow { color: var(--toslow); } .swatch.b-prefetch, .swatch.o-tofast { color: var(--tofast); }
.swatch.o-fast { color: var(--fast); } .swatch.o-slow { color: var(--slow); } .swatch.o-moving { color: var(--moving); }
.swatch.m-late { background: none; border: 2px solid var(--late); }
.mark.m-evict { color: #6b2d00; } .mark.m-prefetch { color: #0b4d1c; }
footer { margin-top: 2em; color: var(--muted); font-size: 0.85em; }
@media print {
  body { max-width: none; padding: 0; font-size: 10.5pt; }
  section, .card, svg.chart, table { break-inside: avoid; page-break-inside: avoid; }
  h2 { break-after: avoid; page-break-after: avoid; }
  .card { background: none; }
  @page { size: A4; margin: 14mm; }
}
)CSS";

const char kReportScript[] = R"JS(
(function () {
  var model = JSON.parse(document.getElementById('report-data').textContent);
  var rows = document.querySelectorAll('#policies tbody tr').length;
  if (model.format !== 'sentinel-report' || rows !== model.policies.length) {
    throw new Error('report data does not match the page');
  }
  document.documentElement.setAttribute('data-report-ready', 'yes');
})();
)JS";

}  // namespace sentinel::report
