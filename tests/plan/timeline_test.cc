#include "plan/timeline.h"

#include <gtest/gtest.h>

#include <sstream>

#include "plan/cost_model.h"
#include "test_profiles.h"

namespace sentinel {
namespace {

// What TimelineWriter writes for a 3-phase step: A (0xa) born fast at 0 and evicted at 1, W (0xb)
// persistent and slow, prefetched at 2.
constexpr const char* kTimeline = R"({"type":"header","format":"sentinel-timeline","version":1,"period":3,"policy":"sentinel","budget_bytes":5000}
{"type":"step","step":7,"t_ns":100}
{"type":"phase","step":7,"phase":0,"t_ns":100,"fast":["0x000000000000000a"],"slow":["0x000000000000000b"],"moving":[]}
{"type":"phase","step":7,"phase":1,"t_ns":200,"fast":["0x000000000000000a"],"slow":["0x000000000000000b"],"moving":[]}
{"type":"move","step":7,"phase":1,"t_ns":201,"tag":"0x000000000000000a","to":"slow","what":"issued"}
{"type":"move","step":7,"phase":1,"t_ns":250,"tag":"0x000000000000000a","to":"slow","what":"done"}
{"type":"phase","step":7,"phase":2,"t_ns":300,"fast":[],"slow":["0x000000000000000a","0x000000000000000b"],"moving":[]}
{"type":"move","step":7,"phase":2,"t_ns":301,"tag":"0x000000000000000b","to":"fast","what":"issued"}
{"type":"step","step":8,"t_ns":400}
{"type":"deviation","step":8,"event":1}
)";

TEST(Timeline, ReadsStepsPhasesAndMoves) {
  std::istringstream in(kTimeline);
  ExecutedTimeline t;
  std::string error;
  ASSERT_TRUE(parse_timeline(in, &t, &error)) << error;
  EXPECT_EQ(t.period, 3u);
  EXPECT_EQ(t.budget_bytes, 5000u);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].step, 7);
  ASSERT_EQ(t.steps[0].issued.size(), 2u);
  EXPECT_EQ(t.steps[0].issued[1].tag, 0xbu);
  EXPECT_EQ(t.steps[0].issued[1].to, Tier::kFast);
  EXPECT_EQ(t.steps[0].moves_done, 1u);
  EXPECT_FALSE(t.steps[0].deviated);
  EXPECT_TRUE(t.steps[1].deviated);
}

TEST(Timeline, TheExecutedStepIsAPlanTheCostModelReplays) {
  std::istringstream in(kTimeline);
  ExecutedTimeline t;
  std::string error;
  ASSERT_TRUE(parse_timeline(in, &t, &error)) << error;
  ProfileIndex index;
  ASSERT_TRUE(index.build(test::make_profile(3, 1000, {test::object(0xa, 1000, 0, 1, {0}), test::persistent(0xb, 2000, 3, {0})}),
                          &error))
      << error;
  Plan plan;
  ASSERT_TRUE(executed_plan(t, t.steps[0], index, &plan, &error)) << error;
  EXPECT_EQ(plan.birth(0xa), Tier::kFast);
  EXPECT_EQ(plan.birth(0xb), Tier::kSlow);
  ASSERT_EQ(plan.events[1].size(), 1u);
  EXPECT_EQ(plan.events[1][0], (Move{0xa, MoveKind::kEvict}));
  ASSERT_EQ(plan.events[2].size(), 1u);
  EXPECT_EQ(plan.events[2][0], (Move{0xb, MoveKind::kPrefetch}));
  MemorySystem mem;
  ASSERT_TRUE(memory_system_preset("cxl", &mem, &error));
  SimResult r;
  ASSERT_TRUE(simulate_plan(index, plan, mem, SimOptions{}, &r, &error)) << error;
  EXPECT_GT(r.step_ns, 0);
  // The replay reports the last of three steps: B, prefetched in the first and never evicted, is fast by
  // then, and A is born fast; one replayed step still reads B from the slow tier.
  EXPECT_DOUBLE_EQ(r.slow_reads, 0);
  EXPECT_DOUBLE_EQ(r.fast_reads, 200000);
  SimOptions one;
  one.steps = 1;
  ASSERT_TRUE(simulate_plan(index, plan, mem, one, &r, &error)) << error;
  EXPECT_DOUBLE_EQ(r.slow_reads, 100000);
  EXPECT_DOUBLE_EQ(r.fast_reads, 100000);
}

TEST(Timeline, RejectsMalformedLinesNamingThem) {
  for (const char* bad : {"", "{\"type\":\"step\",\"step\":1}",
                          "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":3,\"period\":3}",
                          "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":3}\n"
                          "{\"type\":\"phase\",\"step\":1,\"phase\":0}",
                          "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":3}\n"
                          "{\"type\":\"step\",\"step\":1}\n{\"type\":\"move\",\"step\":1,\"phase\":9,\"tag\":\"0x1\"}",
                          "not json"}) {
    std::istringstream in(bad);
    ExecutedTimeline t;
    std::string error;
    EXPECT_FALSE(parse_timeline(in, &t, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

// Found by timeline_fuzz: a field of the wrong type made nlohmann's value() throw out of the reader.
TEST(Timeline, RejectsFieldsOfTheWrongTypeWithoutThrowing) {
  const char* const kHeader = "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":3}\n";
  for (const std::string& bad :
       {std::string("{\"type\":\"header\",\"format\":1,\"version\":1,\"period\":3}"),
        std::string("{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":\"1\",\"period\":3}"),
        std::string("{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":3,\"policy\":7}"),
        // Found by the million-run timeline_fuzz (UBSan): 1e114 converted to an int.
        std::string("{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1e114,\"period\":3}"),
        std::string("{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":3,"
                    "\"budget_bytes\":-1e300}"),
        std::string(kHeader) + "{\"type\":\"step\",\"step\":1}\n{\"type\":\"move\",\"step\":1,\"phase\":0,"
                               "\"tag\":\"0x1\",\"to\":[],\"what\":\"done\"}",
        std::string(kHeader) + "{\"type\":\"step\",\"step\":1}\n{\"type\":\"phase\",\"step\":1,\"phase\":0,"
                               "\"fast\":{}}"}) {
    std::istringstream in(bad);
    ExecutedTimeline t;
    std::string error;
    EXPECT_FALSE(parse_timeline(in, &t, &error)) << bad;
    EXPECT_NE(error.find("timeline line"), std::string::npos) << error;
  }
}

// Seen while writing timeline_fuzz: every step reserved a record per phase of the period (up to 2^24),
// so a few short lines cost gigabytes. Phases are kept by record now.
TEST(Timeline, AHugePeriodCostsMemoryByRecordsNotByPeriod) {
  std::string text = "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":16777216}\n";
  for (int step = 0; step < 1000; ++step) {
    text += "{\"type\":\"step\",\"step\":" + std::to_string(step) + "}\n";
    text += "{\"type\":\"phase\",\"step\":" + std::to_string(step) + ",\"phase\":16777215,\"fast\":[\"0x1\"]}\n";
  }
  std::istringstream in(text);
  ExecutedTimeline t;
  std::string error;
  ASSERT_TRUE(parse_timeline(in, &t, &error)) << error;
  ASSERT_EQ(t.steps.size(), 1000u);
  EXPECT_EQ(t.steps.back().phases.size(), 1u);
  EXPECT_EQ(t.steps.back().phases.at(16777215).fast, std::vector<uint64_t>{1});
}

// Version 2: after a step's first phase record, a record may list only what changed since the step's
// previous one.
constexpr const char* kDeltaTimeline = R"({"type":"header","format":"sentinel-timeline","version":2,"period":3,"policy":"sentinel","budget_bytes":5000}
{"type":"step","step":7,"t_ns":100}
{"type":"phase","step":7,"phase":0,"t_ns":100,"fast":["0x000000000000000a"],"slow":["0x000000000000000b"],"moving":[]}
{"type":"phase","step":7,"phase":1,"t_ns":200,"delta":true}
{"type":"move","step":7,"phase":1,"t_ns":201,"tag":"0x000000000000000a","to":"slow","what":"issued"}
{"type":"move","step":7,"phase":1,"t_ns":250,"tag":"0x000000000000000a","to":"slow","what":"done"}
{"type":"phase","step":7,"phase":2,"t_ns":300,"delta":true,"left_fast":["0x000000000000000a"],"slow":["0x000000000000000a","0x000000000000000c"]}
{"type":"step","step":8,"t_ns":400}
{"type":"phase","step":8,"phase":0,"t_ns":400,"fast":["0x000000000000000b"]}
)";

TEST(Timeline, DeltaPhaseRecordsReadBackAsWholeStates) {
  std::istringstream in(kDeltaTimeline);
  ExecutedTimeline t;
  std::string error;
  ASSERT_TRUE(parse_timeline(in, &t, &error)) << error;
  ASSERT_EQ(t.steps.size(), 2u);
  const auto& phases = t.steps[0].phases;
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases.at(1).fast, std::vector<uint64_t>{0xa});
  EXPECT_EQ(phases.at(1).slow, std::vector<uint64_t>{0xb});
  EXPECT_TRUE(phases.at(2).fast.empty());
  EXPECT_EQ(phases.at(2).slow, (std::vector<uint64_t>{0xb, 0xa, 0xc}));
  EXPECT_EQ(t.steps[1].phases.at(0).fast, std::vector<uint64_t>{0xb});
  EXPECT_TRUE(t.steps[1].phases.at(0).slow.empty());
}

TEST(Timeline, RejectsDeltasWithoutTheirBase) {
  const std::string v2 = "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":2,\"period\":3}\n"
                         "{\"type\":\"step\",\"step\":1}\n";
  const std::string full = "{\"type\":\"phase\",\"step\":1,\"phase\":0,\"fast\":[\"0x1\"]}\n";
  for (const std::string& bad :
       {// a delta in a version-1 timeline
        std::string("{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":1,\"period\":3}\n"
                    "{\"type\":\"step\",\"step\":1}\n") + full +
            "{\"type\":\"phase\",\"step\":1,\"phase\":1,\"delta\":true}",
        // no phase record before it in its step (the previous step's does not count)
        v2 + "{\"type\":\"phase\",\"step\":1,\"phase\":0,\"delta\":true}",
        v2 + full + "{\"type\":\"step\",\"step\":2}\n{\"type\":\"phase\",\"step\":2,\"phase\":1,\"delta\":true}",
        // an object leaves a list it is not on
        v2 + full + "{\"type\":\"phase\",\"step\":1,\"phase\":1,\"delta\":true,\"left_slow\":[\"0x1\"]}",
        v2 + full + "{\"type\":\"phase\",\"step\":1,\"phase\":1,\"delta\":1}"}) {
    std::istringstream in(bad);
    ExecutedTimeline t;
    std::string error;
    EXPECT_FALSE(parse_timeline(in, &t, &error)) << bad;
    EXPECT_NE(error.find("timeline line"), std::string::npos) << error;
  }
}

// A delta of a few bytes copies its step's state: the tags kept over the whole timeline are capped, so a
// short hostile file cannot cost memory quadratic in its length.
TEST(Timeline, DeltaCopiesAreCapped) {
  std::string text = "{\"type\":\"header\",\"format\":\"sentinel-timeline\",\"version\":2,\"period\":16777216}\n"
                     "{\"type\":\"step\",\"step\":1}\n{\"type\":\"phase\",\"step\":1,\"phase\":0,\"fast\":[";
  for (int i = 0; i < 20000; ++i) text += std::string(i ? "," : "") + "\"0x1\"";
  text += "]}\n";
  for (int phase = 1; phase < 2000; ++phase) {
    text += "{\"type\":\"phase\",\"step\":1,\"phase\":" + std::to_string(phase) + ",\"delta\":true}\n";
  }
  std::istringstream in(text);
  ExecutedTimeline t;
  std::string error;
  EXPECT_FALSE(parse_timeline(in, &t, &error));
  EXPECT_NE(error.find("tags in the phase records"), std::string::npos) << error;
}

}  // namespace
}  // namespace sentinel
