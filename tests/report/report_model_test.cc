#include "report/report_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "plan/replay.h"
#include "profile/profile_io.h"
#include "report/input_kind.h"
#include "test_profiles.h"

namespace sentinel::report {
namespace {

using Json = nlohmann::ordered_json;

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/report-test-XXXXXX";
    const int fd = ::mkstemp(name);
    ::close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

const std::string kMlp = std::string(SENTINEL_PROFILES_DIR) + "/mlp-8x1024-b512-sgd.json";

Json model_of(const ReportInputs& in) {
  Json m;
  std::string error;
  EXPECT_TRUE(build_report_model(in, &m, &error)) << error;
  return m;
}

const Json& row(const Json& m, const std::string& policy) {
  for (const Json& r : m["policies"])
    if (r["policy"] == policy) return r;
  static const Json none;
  ADD_FAILURE() << "no row " << policy;
  return none;
}

TEST(ReportModel, MatchesTheReplayOfTheSameProfile) {
  ReportInputs in;
  in.profile_path = kMlp;
  in.optimal = OptimalMode::kOff;
  in.max_object_rows = 100000;  // every object, so that per-object marks add up to the totals
  const Json m = model_of(in);
  ASSERT_EQ(m["format"], "sentinel-report");
  const uint32_t period = m["profile"]["period"];
  EXPECT_EQ(m["policies"].size(), 7u);  // every policy, no optimal row
  const Json& s = row(m, "sentinel");
  // The residency curve's maximum is the replay's DRAM peak and stays within the budget.
  uint64_t peak = 0;
  for (const Json& b : s["residency_bytes"]) peak = std::max<uint64_t>(peak, b.get<uint64_t>());
  EXPECT_EQ(peak, s["dram_peak_bytes"].get<uint64_t>());
  EXPECT_LE(peak, m["summary"]["budget_bytes"].get<uint64_t>());
  EXPECT_EQ(s["residency_bytes"].size(), period);
  // The summary repeats the rows' numbers.
  EXPECT_EQ(m["summary"]["sentinel_ratio"], s["step_time_ratio"]);
  EXPECT_EQ(m["summary"]["all_dram_step_time_ns"], row(m, "all-dram")["step_time_ns"]);
  // Traffic per phase adds up to the bytes migrated per step; moves and late uses per object too.
  uint64_t traffic = 0;
  for (const char* k : {"evict_bytes", "prefetch_bytes"})
    for (const Json& b : m["traffic"][k]) traffic += b.get<uint64_t>();
  EXPECT_EQ(traffic, s["migrated_bytes"].get<uint64_t>());
  uint64_t moved = 0, late = 0;
  uint64_t last_size = ~uint64_t{0};
  for (const Json& o : m["objects"]["rows"]) {
    const uint64_t size = o["size_bytes"];
    EXPECT_LE(size, last_size) << "largest first";
    last_size = size;
    const std::string states = o["states"];
    ASSERT_EQ(states.size(), period);
    moved += size * (o["evictions"].size() + o["prefetches"].size());
    late += o["late"].size();
    // An eviction leaves the object on its way to slow or slow at the phase it was issued at.
    for (const Json& k : o["evictions"]) EXPECT_NE(std::string("ES").find(states[k.get<uint32_t>()]), std::string::npos);
    for (const Json& k : o["prefetches"]) EXPECT_NE(std::string("PF").find(states[k.get<uint32_t>()]), std::string::npos);
    if (o["persistent"].get<bool>()) {
      EXPECT_EQ(states.find('.'), std::string::npos);
    }
  }
  EXPECT_EQ(moved, traffic);
  EXPECT_EQ(late, s["late_prefetches"].get<uint64_t>());
  EXPECT_EQ(m["objects"]["shown"], m["objects"]["total"]);
  // The sweep is the replay's sweep: 5%..100%.
  ASSERT_EQ(m["sweep"].size(), 20u);
  EXPECT_DOUBLE_EQ(m["sweep"][19]["budget_fraction"].get<double>(), 1.0);
  EXPECT_FALSE(m["sweep"][0].contains("optimal"));
}

TEST(ReportModel, ShowsTheLargestObjectsOnlyWhenAsked) {
  ReportInputs in;
  in.profile_path = kMlp;
  in.optimal = OptimalMode::kOff;
  in.max_object_rows = 5;
  const Json m = model_of(in);
  EXPECT_EQ(m["objects"]["rows"].size(), 5u);
  EXPECT_GT(m["objects"]["total"].get<uint64_t>(), 5u);
  EXPECT_LT(m["objects"]["shown_bytes"].get<uint64_t>(), m["objects"]["total_bytes"].get<uint64_t>());
}

// A 3-phase step (the timeline test's): A born at 0 and evicted at 1, W persistent and prefetched at 2.
constexpr const char* kTimeline = R"({"type":"header","format":"sentinel-timeline","version":1,"period":3,"policy":"sentinel","budget_bytes":5000}
{"type":"step","step":7,"t_ns":100}
{"type":"phase","step":7,"phase":0,"t_ns":100,"fast":["0x000000000000000a"],"slow":["0x000000000000000b"],"moving":[]}
{"type":"phase","step":7,"phase":1,"t_ns":200,"fast":["0x000000000000000a"],"slow":["0x000000000000000b"],"moving":[]}
{"type":"move","step":7,"phase":1,"t_ns":201,"tag":"0x000000000000000a","to":"slow","what":"issued"}
{"type":"phase","step":7,"phase":2,"t_ns":300,"fast":[],"slow":["0x000000000000000a"],"moving":["0x000000000000000b"]}
{"type":"move","step":7,"phase":2,"t_ns":301,"tag":"0x000000000000000b","to":"fast","what":"issued"}
)";

TEST(ReportModel, AddsTheExecutedStepAndTheRunStatistics) {
  std::string error;
  const StepProfile p = test::make_profile(
      3, 1000000, {test::object(0xa, 1 << 20, 0, 1, {0}), test::persistent(0xb, 2 << 20, 3, {0})});
  TempFile profile(serialize_profile(p));
  TempFile timeline(kTimeline);
  TempFile stats(R"({"version":1,"mode":"managed","steps_detected":12,"managed_steps":9,"plan_fidelity":0.97})");
  ReportInputs in;
  in.profile_path = profile.path;
  in.timeline_path = timeline.path;
  in.stats_path = stats.path;
  in.optimal = OptimalMode::kOn;  // a tiny profile: the MILP is cheap
  const Json m = model_of(in);
  EXPECT_EQ(m["stats"]["managed_steps"], 9);
  const Json& x = m["executed"];
  EXPECT_EQ(x["step"], 7);
  EXPECT_EQ(x["moves_issued"], 2);
  ASSERT_EQ(x["objects"].size(), 2u);
  // Rows are largest first: W (2 MiB) then A; their states as the runtime recorded them.
  EXPECT_EQ(x["objects"][0]["tag"], "0x000000000000000b");
  EXPECT_EQ(x["objects"][0]["states"], "SSM");
  EXPECT_EQ(x["objects"][1]["states"], "FFS");  // as recorded, even where the profile has A dead
  EXPECT_EQ(x["evict_bytes"][1], 1 << 20);
  EXPECT_EQ(x["prefetch_bytes"][2], 2 << 20);
  // The executed step is a row of its own, with its residency, next to the optimal plan's row.
  EXPECT_TRUE(row(m, "executed step 7").contains("residency_bytes"));
  EXPECT_TRUE(row(m, "optimal").contains("solver_status"));
  EXPECT_TRUE(m["sweep"][0].contains("optimal"));
}

TEST(InputKind, TellsTheThreeFilesApart) {
  TempFile timeline(kTimeline);
  TempFile stats(R"({"mode":"track","steps_detected":0})");
  TempFile other(R"({"hello":1})");
  InputKind k;
  std::string error;
  ASSERT_TRUE(detect_input_kind(kMlp, &k, &error)) << error;
  EXPECT_EQ(k, InputKind::kProfile);
  ASSERT_TRUE(detect_input_kind(timeline.path, &k, &error)) << error;
  EXPECT_EQ(k, InputKind::kTimeline);
  ASSERT_TRUE(detect_input_kind(stats.path, &k, &error)) << error;
  EXPECT_EQ(k, InputKind::kStats);
  EXPECT_FALSE(detect_input_kind(other.path, &k, &error));
  EXPECT_FALSE(detect_input_kind("/nonexistent/file", &k, &error));
}

}  // namespace
}  // namespace sentinel::report
