#include "report/page.h"

#include <gtest/gtest.h>

#include "report/report_model.h"

namespace sentinel::report {
namespace {

using Json = nlohmann::ordered_json;

Json mlp_model() {
  ReportInputs in;
  in.profile_path = std::string(SENTINEL_PROFILES_DIR) + "/mlp-8x1024-b512-sgd.json";
  in.optimal = OptimalMode::kOff;
  Json m;
  std::string error;
  EXPECT_TRUE(build_report_model(in, &m, &error)) << error;
  return m;
}

// The JSON embedded in the page, read back the way a browser would.
Json embedded(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const size_t b = html.find(open);
  const size_t e = html.find("</script>", b);
  EXPECT_NE(b, std::string::npos);
  const std::string text = html.substr(b + open.size(), e - b - open.size());
  EXPECT_EQ(text.find('<'), std::string::npos);
  return Json::parse(text);
}

TEST(Page, HasEverySectionAndChart) {
  const std::string html = render_report_html(mlp_model(), "9.9");
  for (const char* id : {"id=\"summary\"", "id=\"what-profiled\"", "id=\"plan-promise\"", "id=\"what-happened\"",
                         "id=\"policies\"", "id=\"chart-dram\"", "id=\"chart-objects\"", "id=\"chart-traffic\"",
                         "id=\"chart-sweep\"", "id=\"sweep\"", "id=\"report-data\"", "@media print"})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  EXPECT_EQ(html.find("id=\"chart-executed\""), std::string::npos);  // no timeline given
  EXPECT_NE(html.find("sentinel 9.9"), std::string::npos);
}

TEST(Page, IsSelfContained) {
  const std::string html = render_report_html(mlp_model(), "1");
  for (const char* ref : {"http:", "https:", "src=", "href=", "@import", "url("})
    EXPECT_EQ(html.find(ref), std::string::npos) << ref;
}

TEST(Page, EmbedsTheModelUnchanged) {
  const Json m = mlp_model();
  EXPECT_EQ(embedded(render_report_html(m, "1")), m);
}

TEST(Page, TextFromTheInputsCannotBreakOutOfThePage) {
  Json m = mlp_model();
  m["profile"]["program"] = "python3 x.py </script><script>alert(1)</script> & <b>";
  const std::string html = render_report_html(m, "1");
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;/script&gt;&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_EQ(embedded(html), m);
}

}  // namespace
}  // namespace sentinel::report
