// Small helpers for writing SVG and HTML text by hand: escaping, number and byte formatting, axis ticks.
// Every chart of the report (charts.h) is built from these; nothing here knows about Sentinel.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/human_bytes.h"

namespace sentinel::report {

// Text for an XML/HTML text node or a quoted attribute value (& < > " ' escaped).
std::string xml_escape(std::string_view text);

// A number with at most `decimals` digits after the point, trailing zeros dropped ("1.5", "12", "-0.25").
std::string num(double value, int decimals = 2);

// Bytes for a reader (core/human_bytes.h).
using ::sentinel::human_bytes;

// Nanoseconds for a reader: "850 ns", "12.3 us", "271.8 ms", "1.25 s".
std::string human_ns(double ns);

// About `count` evenly spaced "nice" tick values (steps of 1, 2 or 5 times a power of ten) covering
// [0, max]; the last tick is >= max. max <= 0 gives {0, 1}.
std::vector<double> nice_ticks(double max, int count);

// Frame of an x/y chart: the plot area inside a width x height SVG with margins for the axes.
struct PlotArea {
  double width = 900, height = 300;
  double left = 70, right = 20, top = 16, bottom = 44;
  double x0() const { return left; }
  double x1() const { return width - right; }
  double y0() const { return height - bottom; }  // the baseline (value 0)
  double y1() const { return top; }
};

// <svg ...> opening tag with a viewBox, role="img" and an accessible title.
std::string svg_open(const std::string& id, double width, double height, const std::string& title);

// Axes with grid lines and tick labels: x ticks map [0, x_max] and y ticks [0, y_max] onto the area.
// Labels come from the given formatters' output (already text).
std::string axes(const PlotArea& a, const std::vector<double>& x_ticks, const std::vector<std::string>& x_labels,
                 double x_max, const std::vector<double>& y_ticks, const std::vector<std::string>& y_labels,
                 double y_max, const std::string& x_title, const std::string& y_title);

}  // namespace sentinel::report
