#include "report/page.h"

#include "core/stats_keys.h"
#include "report/charts.h"
#include "report/page_style.h"
#include "report/svg.h"

namespace sentinel::report {
namespace {

using Json = nlohmann::ordered_json;

std::string esc(const std::string& s) { return xml_escape(s); }
double d(const Json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0; }
std::string str(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}
std::string ratio(double r) { return num(r, 3) + "x"; }
std::string pct(double f) { return num(100 * f, 1) + "%"; }

std::string profiled_card(const Json& m) {
  const Json& p = m["profile"];
  std::string program = str(p, "program");
  if (program.empty()) program = str(p, "path");
  return "<div class=\"card\" id=\"what-profiled\"><h3>What was profiled</h3><p><code>" + esc(program) +
         "</code></p><p>" + num(d(p, "objects"), 0) + " objects, " + num(d(p, "period"), 0) +
         " allocation events per step, peak " + esc(human_bytes(d(p, "peak_bytes"))) + " of live objects, step " +
         esc(human_ns(d(p, "step_time_ns"))) + " (measured, " + num(d(p, "profiled_steps"), 0) +
         " steps profiled, sampler " + esc(str(p, "sampler")) + ").</p><p class=\"note\">Profile " +
         esc(str(p, "path")) + "; tier model " + esc(str(m["tier"], "name")) + ": " +
         esc(str(m["tier"], "description")) + "</p></div>";
}

std::string promise_card(const Json& m) {
  const Json& s = m["summary"];
  std::string t = "<div class=\"card\" id=\"plan-promise\"><h3>What the plan promises (modeled)</h3>"
                  "<p>With " + esc(human_bytes(d(s, "budget_bytes"))) + " of DRAM (" + pct(d(s, "budget_share")) +
                  " of the peak), Sentinel's step takes</p><p class=\"big\">" + ratio(d(s, "sentinel_ratio")) +
                  " the all-DRAM step</p><p>" + esc(human_ns(d(s, "sentinel_step_time_ns"))) + " against " +
                  esc(human_ns(d(s, "all_dram_step_time_ns"))) + "; the best baseline (" +
                  esc(str(s, "best_baseline")) + ") takes " + ratio(d(s, "best_baseline_ratio")) + ".";
  if (s.contains("optimal_ratio"))
    t += " The optimal plan (MILP, " + esc(str(s, "optimal_status")) + "): " + ratio(d(s, "optimal_ratio")) + ".";
  t += "</p><p>" + esc(human_bytes(d(s, "sentinel_migrated_bytes"))) + " migrated per step, " +
       num(d(s, "sentinel_late_prefetches"), 0) + " late prefetches.";
  if (s.contains("sentinel_budget_insufficient") && s["sentinel_budget_insufficient"].get<bool>())
    t += " <strong>The budget is below what the plan needs.</strong>";
  return t + "</p></div>";
}

std::string happened_card(const Json& m) {
  std::string t = "<div class=\"card\" id=\"what-happened\"><h3>What happened</h3>";
  if (!m.contains("stats") && !m.contains("executed"))
    return t + "<p>No run was given: pass the run's stats file (SENTINEL_STATS) and executed timeline "
               "(SENTINEL_TIMELINE) to see it here.</p></div>";
  if (m.contains("stats")) {
    const Json& st = m["stats"];
    t += "<p>" + esc(str(st, stats_key::kMode)) + " mode, " + num(d(st, stats_key::kRuntimeSeconds), 1) + " s, " +
         num(d(st, stats_key::kStepsDetected), 0) + " steps (" + esc(str(st, stats_key::kStepDetection)) + "), peak " +
         esc(human_bytes(d(st, stats_key::kPeakObjectBytes))) + " in objects.</p>";
    if (str(st, stats_key::kMode) == "managed") {
      t += "<p>" + num(d(st, stats_key::kManagedSteps), 0) + " managed steps (" + esc(str(st, stats_key::kManagedStage)) +
           "), plan fidelity <span class=\"big\">" + pct(d(st, stats_key::kPlanFidelity)) + "</span>, " +
           esc(human_bytes(d(st, stats_key::kBytesMigratedPerStep))) + " migrated per step (planned " +
           esc(human_bytes(d(st, stats_key::kPlannedBytesPerStep))) + "), " + num(d(st, stats_key::kLatePrefetches), 0) +
           " late prefetches.</p>";
    } else if (d(st, stats_key::kSlowNode) < 0) {
      t += "<p>No slow memory node: " + esc(str(st, stats_key::kTopology)) + ".</p>";
    }
  }
  if (m.contains("executed") && m["executed"].contains("step")) {
    const Json& x = m["executed"];
    double r = 0;
    for (const Json& row : m["policies"])
      if (str(row, "policy").rfind("executed step " + num(d(x, "step"), 0), 0) == 0) r = d(row, "step_time_ratio");
    t += "<p>Executed step " + num(d(x, "step"), 0) + (x["deviated"].get<bool>() ? " (left the plan)" : "") +
         ": " + num(d(x, "moves_issued"), 0) + " moves issued, " + num(d(x, "moves_done"), 0) + " done, " +
         num(d(x, "moves_failed"), 0) + " failed; replayed by the model it takes " + ratio(r) +
         " the all-DRAM step.</p>";
  }
  return t + "</div>";
}

std::string policy_table(const Json& m) {
  std::string t = "<table id=\"policies\"><thead><tr><th>policy</th><th>step (modeled)</th><th>vs all-DRAM</th>"
                  "<th>DRAM peak</th><th>migrated / step</th><th>late prefetches</th><th>notes</th></tr></thead><tbody>";
  for (const Json& r : m["policies"]) {
    std::string note = d(r, "budget_violations") > 0 ? "budget exceeded"
                       : (r.contains("budget_insufficient") && r["budget_insufficient"].get<bool>()) ? "budget insufficient" : "";
    if (r.contains("solver_status")) note += (note.empty() ? "" : ", ") + str(r, "solver_status");
    const std::string p = str(r, "policy");
    t += "<tr class=\"" + std::string(p == "sentinel" ? "sentinel" : "") + "\"><td>" + esc(p) + "</td><td>" +
         esc(human_ns(d(r, "step_time_ns"))) + "</td><td>" + ratio(d(r, "step_time_ratio")) + "</td><td>" +
         esc(human_bytes(d(r, "dram_peak_bytes"))) + "</td><td>" + esc(human_bytes(d(r, "migrated_bytes"))) +
         "</td><td>" + num(d(r, "late_prefetches"), 0) + "</td><td class=\"notes\" title=\"" +
         esc(str(r, "message")) + "\">" + esc(note) + "</td></tr>";
  }
  return t + "</tbody></table>";
}

std::string sweep_table(const Json& m) {
  const bool opt = !m["sweep"].empty() && m["sweep"][0].contains("optimal");
  std::string t = "<table id=\"sweep\"><thead><tr><th>DRAM share</th><th>budget</th><th>sentinel</th>"
                  "<th>best baseline</th><th>its ratio</th>" + std::string(opt ? "<th>optimal</th>" : "") +
                  "<th>gap closed</th></tr></thead><tbody>";
  for (const Json& p : m["sweep"]) {
    t += "<tr><td>" + pct(d(p, "budget_fraction")) + "</td><td>" + esc(human_bytes(d(p, "budget_bytes"))) +
         "</td><td>" + ratio(d(p["sentinel"], "step_time_ratio")) + "</td><td>" +
         esc(str(p["best_baseline"], "policy")) + "</td><td>" + ratio(d(p["best_baseline"], "step_time_ratio")) +
         "</td>" + (opt ? "<td>" + (p.contains("optimal") ? ratio(d(p["optimal"], "step_time_ratio")) : "") + "</td>" : "") +
         "<td>" + pct(d(p, "gap_closed")) + "</td></tr>";
  }
  return t + "</tbody></table>";
}

}  // namespace

std::string embedded_json(const Json& model) {
  // Every '<' as \u003c: the text can then never end the script element or open a comment in it.
  const std::string s = model.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string render_report_html(const Json& m, const std::string& version) {
  const Json& prof = m["profile"];
  std::string title = "Sentinel report: " + (str(prof, "program").empty() ? str(prof, "path") : str(prof, "program"));
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
                  "script-src 'unsafe-inline'; img-src data:\">"
                  "<title>" + esc(title) + "</title><style>" + kReportCss + "</style></head><body>";
  h += "<header><h1>" + esc(title) + "</h1><p class=\"sub\">" + esc(str(m, "modeled")) + ".</p></header>";
  h += "<section id=\"summary\"><div class=\"cards\">" + profiled_card(m) + promise_card(m) + happened_card(m) +
       "</div></section>";
  h += "<section id=\"section-policies\"><h2>Every policy at this budget</h2>" + policy_table(m) +
       "<p class=\"note\">Hover a note for the policy's message. Times are modeled.</p></section>";
  h += "<section id=\"section-dram\"><h2>DRAM in use over the step</h2>" + dram_chart(m) +
       "<p class=\"note\">Fast-tier bytes per phase (maximum over the replayed steps, in-flight copies counted), "
       "x = time in the step with the measured phase durations.</p></section>";
  const Json& objs = m["objects"];
  h += "<section id=\"section-objects\"><h2>Where each object lives (Sentinel's plan)</h2>" +
       object_chart(m, objs["rows"], "chart-objects", "Per-object timeline of Sentinel's plan (modeled)") +
       "<p class=\"note\">" + num(d(objs, "shown"), 0) + " of " + num(d(objs, "total"), 0) + " objects (" +
       esc(human_bytes(d(objs, "shown_bytes"))) + " of " + esc(human_bytes(d(objs, "total_bytes"))) +
       "), largest first; columns are the phases of the step.</p></section>";
  if (m.contains("executed") && m["executed"].contains("objects")) {
    h += "<section id=\"section-executed\"><h2>Where each object was (executed step " +
         num(d(m["executed"], "step"), 0) + ")</h2>" +
         object_chart(m, m["executed"]["objects"], "chart-executed", "Per-object timeline as executed") +
         "<p class=\"note\">States as the runtime recorded them at each phase start "
         "(docs/timeline-format.md); late prefetches as the model replays the executed moves.</p></section>";
  }
  h += "<section id=\"section-traffic\"><h2>Migration traffic per phase</h2>" + traffic_chart(m) + "</section>";
  h += "<section id=\"section-sweep\"><h2>Budget sweep</h2>" + sweep_chart(m) + sweep_table(m) +
       "<p class=\"note\">Modeled step time over the modeled all-DRAM step; the best baseline is the fastest "
       "policy other than Sentinel at each budget.</p></section>";
  h += "<footer>sentinel " + esc(version) + " &middot; every number on this page is in the embedded JSON "
       "(<code>#report-data</code>, or <code>sentinel report --json</code>).</footer>";
  h += "<script type=\"application/json\" id=\"report-data\">" + embedded_json(m) + "</script>";
  h += std::string("<script>") + kReportScript + "</script></body></html>\n";
  return h;
}

}  // namespace sentinel::report
