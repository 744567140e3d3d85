#include "report/charts.h"
#include "report/line_chart.h"

namespace sentinel::report {

std::string dram_chart(const nlohmann::ordered_json& model) {
  const auto& starts = model["phases"]["start_ns"];
  const double step_ns = model["profile"]["step_time_ns"].get<double>();
  LineChartSpec c;
  c.id = "chart-dram";
  c.title = "Fast memory (DRAM) in use over the step, per policy (modeled)";
  c.x_title = "time in the step (measured phase durations)";
  c.y_title = "DRAM in use";
  c.x_label = [](double ns) { return human_ns(ns); };
  c.y_label = [](double b) { return human_bytes(b); };
  c.x_max = step_ns;
  c.area.height = 320;
  for (const auto& row : model["policies"]) {
    if (!row.contains("residency_bytes")) continue;
    const std::string name = row["policy"];
    LineSeries s;
    s.name = name;
    s.step = true;
    s.css_class = name == "sentinel" ? "s-sentinel" : name == "all-dram" ? "s-dram"
                  : name == "optimal" ? "s-optimal" : name.rfind("executed", 0) == 0 ? "s-executed"
                  : "s-" + name;
    const auto& res = row["residency_bytes"];
    for (size_t k = 0; k < res.size() && k < starts.size(); ++k)
      s.points.emplace_back(starts[k].get<double>(), res[k].get<double>());
    c.series.push_back(std::move(s));
  }
  if (c.series.empty()) return "";
  c.lines.push_back({model["summary"]["budget_bytes"].get<double>(), "budget", "r-budget"});
  c.lines.push_back({model["profile"]["peak_bytes"].get<double>(), "peak of live objects", "r-peak"});
  return line_chart(c) + legend(c);
}

}  // namespace sentinel::report
