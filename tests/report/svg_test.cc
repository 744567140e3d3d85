#include "report/svg.h"
#include "report/line_chart.h"

#include <gtest/gtest.h>

namespace sentinel::report {
namespace {

TEST(Svg, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(xml_escape("</script>"), "&lt;/script&gt;");
}

TEST(Svg, NumbersDropTrailingZeros) {
  EXPECT_EQ(num(1.5, 2), "1.5");
  EXPECT_EQ(num(12.0, 3), "12");
  EXPECT_EQ(num(-0.0001, 2), "0");
  EXPECT_EQ(num(0.126, 2), "0.13");
}

TEST(Svg, HumanUnits) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(130.4 * 1024 * 1024), "130.4 MiB");
  EXPECT_EQ(human_ns(850), "850 ns");
  EXPECT_EQ(human_ns(271.8e6), "271.8 ms");
}

TEST(Svg, NiceTicksCoverTheRangeInRoundSteps) {
  const std::vector<double> t = nice_ticks(130, 5);
  ASSERT_GE(t.size(), 2u);
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 130);
  const double step = t[1] - t[0];
  EXPECT_TRUE(step == 20 || step == 50) << step;
  for (size_t i = 1; i < t.size(); ++i) EXPECT_DOUBLE_EQ(t[i] - t[i - 1], step);
  EXPECT_EQ(nice_ticks(0, 5), (std::vector<double>{0, 1}));
}

TEST(LineChart, DrawsEverySeriesReferenceLineAndTooltip) {
  LineChartSpec c;
  c.id = "c1";
  c.title = "t <1>";
  c.x_label = [](double x) { return num(x, 0); };
  c.y_label = [](double y) { return num(y, 1) + " B"; };
  c.series.push_back({"a&b", "s-a", {{0, 1}, {5, 3}, {10, 2}}, true, false});
  c.series.push_back({"z", "s-z", {{0, 2}, {10, 4}}, false, true});
  c.lines.push_back({3.5, "budget", "r-budget"});
  const std::string svg = line_chart(c);
  EXPECT_EQ(svg.rfind("<svg id=\"c1\"", 0), 0u);
  EXPECT_NE(svg.find("<title>t &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("data-series=\"a&amp;b\""), std::string::npos);
  EXPECT_NE(svg.find("data-series=\"z\""), std::string::npos);
  EXPECT_NE(svg.find("budget: 3.5 B"), std::string::npos);  // the reference line's tooltip
  EXPECT_NE(svg.find("z at 10: 4 B"), std::string::npos);   // a marker's tooltip
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
  const std::string l = legend(c);
  EXPECT_NE(l.find("a&amp;b"), std::string::npos);
  EXPECT_NE(l.find("budget"), std::string::npos);
}

}  // namespace
}  // namespace sentinel::report
