#include "report/line_chart.h"

#include <algorithm>

namespace sentinel::report {

std::string line_chart(const LineChartSpec& spec) {
  double x_max = spec.x_max, y_max = spec.y_max;
  for (const LineSeries& s : spec.series)
    for (const auto& [x, y] : s.points) {
      if (spec.x_max <= 0) x_max = std::max(x_max, x);
      if (spec.y_max <= 0) y_max = std::max(y_max, y);
    }
  if (spec.y_max <= 0)
    for (const RefLine& l : spec.lines) y_max = std::max(y_max, l.y);
  const double y_lo = spec.y_min;
  // Ticks over the span above y_lo, labelled with their values.
  const std::vector<double> xt = nice_ticks(x_max, 8), yt = nice_ticks((y_max - y_lo) * 1.05, 5);
  x_max = std::max(x_max, 1e-300);
  const double y_span = yt.back() > 0 ? yt.back() : 1;
  const PlotArea& a = spec.area;
  auto px = [&](double x) { return a.x0() + x / x_max * (a.x1() - a.x0()); };
  auto py = [&](double y) { return a.y0() - (y - y_lo) / y_span * (a.y0() - a.y1()); };
  std::vector<std::string> xl, yl;
  std::vector<double> xt_in;
  for (double t : xt)
    if (t <= x_max * (1 + 1e-9)) {
      xt_in.push_back(t);
      xl.push_back(spec.x_label(t));
    }
  for (double t : yt) yl.push_back(spec.y_label(y_lo + t));
  std::string s = svg_open(spec.id, a.width, a.height, spec.title);
  s += axes(a, xt_in, xl, x_max, yt, yl, y_span, spec.x_title, spec.y_title);
  for (const RefLine& l : spec.lines) {
    const double y = py(l.y);
    s += "<g class=\"ref " + xml_escape(l.css_class) + "\"><line x1=\"" + num(a.x0(), 1) + "\" x2=\"" +
         num(a.x1(), 1) + "\" y1=\"" + num(y, 1) + "\" y2=\"" + num(y, 1) + "\"><title>" +
         xml_escape(l.label + ": " + spec.y_label(l.y)) + "</title></line><text x=\"" + num(a.x1() - 4, 1) +
         "\" y=\"" + num(y - 4, 1) + "\" text-anchor=\"end\">" + xml_escape(l.label) + "</text></g>";
  }
  for (const LineSeries& ser : spec.series) {
    if (ser.points.empty()) continue;
    std::string d;
    for (size_t i = 0; i < ser.points.size(); ++i) {
      const auto& [x, y] = ser.points[i];
      if (i == 0) {
        d += "M" + num(px(x), 1) + " " + num(py(y), 1);
      } else if (ser.step) {
        d += "H" + num(px(x), 1) + "V" + num(py(y), 1);
      } else {
        d += "L" + num(px(x), 1) + " " + num(py(y), 1);
      }
    }
    if (ser.step) d += "H" + num(a.x1(), 1);
    s += "<g class=\"series " + xml_escape(ser.css_class) + "\" data-series=\"" + xml_escape(ser.name) +
         "\"><path d=\"" + d + "\"><title>" + xml_escape(ser.name) + "</title></path>";
    if (ser.markers)
      for (const auto& [x, y] : ser.points)
        s += "<circle cx=\"" + num(px(x), 1) + "\" cy=\"" + num(py(y), 1) + "\" r=\"3\"><title>" +
             xml_escape(ser.name + " at " + spec.x_label(x) + ": " + spec.y_label(y)) + "</title></circle>";
    s += "</g>";
  }
  return s + "</svg>";
}

std::string legend(const LineChartSpec& spec) {
  std::string s = "<ul class=\"legend\">";
  for (const LineSeries& ser : spec.series)
    s += "<li><span class=\"swatch " + xml_escape(ser.css_class) + "\"></span>" + xml_escape(ser.name) + "</li>";
  for (const RefLine& l : spec.lines)
    s += "<li><span class=\"swatch ref " + xml_escape(l.css_class) + "\"></span>" + xml_escape(l.label) + "</li>";
  return s + "</ul>";
}

}  // namespace sentinel::report
