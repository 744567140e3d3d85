#include "report/charts.h"
#include "report/line_chart.h"

namespace sentinel::report {

std::string sweep_chart(const nlohmann::ordered_json& model) {
  const auto& sweep = model["sweep"];
  if (!sweep.is_array() || sweep.empty()) return "";
  LineChartSpec c;
  c.id = "chart-sweep";
  c.title = "Modeled step time against the DRAM share of the peak";
  c.x_title = "DRAM budget (share of the peak of live objects)";
  c.y_title = "step time / all-DRAM";
  c.x_label = [](double f) { return num(100 * f, 0) + "%"; };
  c.y_label = [](double r) { return num(r, 2) + "x"; };
  c.x_max = 1.0;
  c.y_min = 1.0;  // no policy beats all-DRAM: start the axis there so that the gaps show
  LineSeries sentinel{"sentinel", "s-sentinel", {}, false, true};
  LineSeries best{"best baseline", "s-baseline", {}, false, true};
  LineSeries optimal{"optimal (MILP)", "s-optimal", {}, false, true};
  for (const auto& p : sweep) {
    const double f = p["budget_fraction"].get<double>();
    sentinel.points.emplace_back(f, p["sentinel"]["step_time_ratio"].get<double>());
    best.points.emplace_back(f, p["best_baseline"]["step_time_ratio"].get<double>());
    if (p.contains("optimal")) optimal.points.emplace_back(f, p["optimal"]["step_time_ratio"].get<double>());
  }
  c.series = {best, sentinel};
  if (!optimal.points.empty()) c.series.push_back(optimal);
  c.lines.push_back({1.0, "all-DRAM", "r-dram"});
  return line_chart(c) + legend(c);
}

}  // namespace sentinel::report
