// A generic x/y line chart in SVG: several series (straight or step lines, optional point markers) and
// horizontal reference lines (e.g. a budget), on axes from 0 (or y_min). Every point carries a <title> tooltip.
//
// Thread safety: pure function.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "report/svg.h"

namespace sentinel::report {

struct LineSeries {
  std::string name;
  std::string css_class;  // styles the line (report CSS: s-sentinel, s-baseline, ...)
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
  bool step = false;      // a step function: y holds from x to the next point's x
  bool markers = false;   // a dot at every point
};

struct RefLine {
  double y = 0;
  std::string label;
  std::string css_class;
};

struct LineChartSpec {
  std::string id;         // the <svg> element id
  std::string title;
  std::string x_title, y_title;
  std::function<std::string(double)> x_label, y_label;  // tick and tooltip text
  double x_max = 0;       // 0: the largest x of any series
  double y_max = 0;       // 0: the largest y of any series or reference line
  double y_min = 0;       // the bottom of the y axis (e.g. 1 for ratios to a reference)
  PlotArea area;
  std::vector<LineSeries> series;
  std::vector<RefLine> lines;
};

std::string line_chart(const LineChartSpec& spec);

// An HTML legend for the series and lines of a chart (class names match the SVG strokes).
std::string legend(const LineChartSpec& spec);

}  // namespace sentinel::report
