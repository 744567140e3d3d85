#include "report/svg.h"

#include <cmath>
#include <cstdio>

namespace sentinel::report {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals < 0 ? 0 : decimals, value);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string human_ns(double ns) {
  char buf[48];
  if (std::fabs(ns) < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (std::fabs(ns) < 1e6) std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else if (std::fabs(ns) < 1e9) std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

std::vector<double> nice_ticks(double max, int count) {
  if (!(max > 0) || !std::isfinite(max)) return {0, 1};
  if (count < 1) count = 1;
  const double raw = max / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    const double t = i * step;
    ticks.push_back(t);
    if (t >= max * (1 - 1e-12)) break;
  }
  return ticks;
}

std::string svg_open(const std::string& id, double width, double height, const std::string& title) {
  return "<svg id=\"" + xml_escape(id) + "\" class=\"chart\" viewBox=\"0 0 " + num(width, 1) + " " +
         num(height, 1) + "\" preserveAspectRatio=\"xMinYMin meet\" role=\"img\">"
         "<title>" + xml_escape(title) + "</title>";
}

std::string axes(const PlotArea& a, const std::vector<double>& x_ticks, const std::vector<std::string>& x_labels,
                 double x_max, const std::vector<double>& y_ticks, const std::vector<std::string>& y_labels,
                 double y_max, const std::string& x_title, const std::string& y_title) {
  std::string s = "<g class=\"axes\">";
  const double xw = a.x1() - a.x0(), yh = a.y0() - a.y1();
  for (size_t i = 0; i < y_ticks.size(); ++i) {
    const double y = a.y0() - (y_max > 0 ? y_ticks[i] / y_max : 0) * yh;
    s += "<line class=\"grid\" x1=\"" + num(a.x0(), 1) + "\" x2=\"" + num(a.x1(), 1) + "\" y1=\"" + num(y, 1) +
         "\" y2=\"" + num(y, 1) + "\"/>";
    s += "<text class=\"tick\" x=\"" + num(a.x0() - 6, 1) + "\" y=\"" + num(y + 4, 1) + "\" text-anchor=\"end\">" +
         xml_escape(i < y_labels.size() ? y_labels[i] : "") + "</text>";
  }
  for (size_t i = 0; i < x_ticks.size(); ++i) {
    const double x = a.x0() + (x_max > 0 ? x_ticks[i] / x_max : 0) * xw;
    s += "<line class=\"tick-mark\" x1=\"" + num(x, 1) + "\" x2=\"" + num(x, 1) + "\" y1=\"" + num(a.y0(), 1) +
         "\" y2=\"" + num(a.y0() + 5, 1) + "\"/>";
    s += "<text class=\"tick\" x=\"" + num(x, 1) + "\" y=\"" + num(a.y0() + 18, 1) + "\" text-anchor=\"middle\">" +
         xml_escape(i < x_labels.size() ? x_labels[i] : "") + "</text>";
  }
  s += "<line class=\"axis\" x1=\"" + num(a.x0(), 1) + "\" x2=\"" + num(a.x1(), 1) + "\" y1=\"" + num(a.y0(), 1) +
       "\" y2=\"" + num(a.y0(), 1) + "\"/>";
  s += "<line class=\"axis\" x1=\"" + num(a.x0(), 1) + "\" x2=\"" + num(a.x0(), 1) + "\" y1=\"" + num(a.y1(), 1) +
       "\" y2=\"" + num(a.y0(), 1) + "\"/>";
  s += "<text class=\"axis-title\" x=\"" + num((a.x0() + a.x1()) / 2, 1) + "\" y=\"" + num(a.height - 6, 1) +
       "\" text-anchor=\"middle\">" + xml_escape(x_title) + "</text>";
  s += "<text class=\"axis-title\" transform=\"translate(14 " + num((a.y0() + a.y1()) / 2, 1) +
       ") rotate(-90)\" text-anchor=\"middle\">" + xml_escape(y_title) + "</text>";
  return s + "</g>";
}

}  // namespace sentinel::report
