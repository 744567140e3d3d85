#include "report/charts.h"

#include <algorithm>

#include "report/svg.h"

namespace sentinel::report {

std::string traffic_chart(const nlohmann::ordered_json& model) {
  const auto& ev = model["traffic"]["evict_bytes"];
  const auto& pf = model["traffic"]["prefetch_bytes"];
  if (!ev.is_array() || ev.empty() || ev.size() != pf.size()) return "";
  const size_t P = ev.size();
  double y_max = 0;
  for (size_t k = 0; k < P; ++k) y_max = std::max(y_max, ev[k].get<double>() + pf[k].get<double>());
  PlotArea a;
  a.height = 240;
  const std::vector<double> yt = nice_ticks(y_max * 1.05, 4);
  const double top = yt.back() > 0 ? yt.back() : 1;
  std::vector<std::string> yl;
  for (double t : yt) yl.push_back(human_bytes(t));
  const std::vector<double> xt = nice_ticks(static_cast<double>(P), 10);
  std::vector<double> xt_in;
  std::vector<std::string> xl;
  for (double t : xt)
    if (t <= static_cast<double>(P)) {
      xt_in.push_back(t);
      xl.push_back(num(t, 0));
    }
  std::string s = svg_open("chart-traffic", a.width, a.height, "Migration traffic issued per phase (Sentinel's plan, modeled)");
  s += axes(a, xt_in, xl, static_cast<double>(P), yt, yl, top, "phase (allocation event) of the step", "bytes issued");
  const double w = (a.x1() - a.x0()) / static_cast<double>(P);
  const double bar = std::max(1.0, w * 0.8);
  auto h = [&](double b) { return b / top * (a.y0() - a.y1()); };
  for (size_t k = 0; k < P; ++k) {
    const double e = ev[k].get<double>(), p = pf[k].get<double>();
    if (e + p <= 0) continue;
    const double x = a.x0() + static_cast<double>(k) * w + (w - bar) / 2;
    const std::string tip = "phase " + std::to_string(k) + ": evicted " + human_bytes(e) + ", prefetched " + human_bytes(p);
    s += "<g class=\"bar\" data-phase=\"" + std::to_string(k) + "\"><title>" + xml_escape(tip) + "</title>";
    if (e > 0)
      s += "<rect class=\"b-evict\" x=\"" + num(x, 2) + "\" y=\"" + num(a.y0() - h(e), 2) + "\" width=\"" +
           num(bar, 2) + "\" height=\"" + num(h(e), 2) + "\"/>";
    if (p > 0)
      s += "<rect class=\"b-prefetch\" x=\"" + num(x, 2) + "\" y=\"" + num(a.y0() - h(e) - h(p), 2) +
           "\" width=\"" + num(bar, 2) + "\" height=\"" + num(h(p), 2) + "\"/>";
    s += "</g>";
  }
  s += "</svg>";
  s += "<ul class=\"legend\"><li><span class=\"swatch b-evict\"></span>evictions (to slow)</li>"
       "<li><span class=\"swatch b-prefetch\"></span>prefetches (to fast)</li></ul>";
  return s;
}

}  // namespace sentinel::report
