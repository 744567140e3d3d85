#include "plan/plan_io.h"

#include <gtest/gtest.h>

#include <random>

#include "plan/planner.h"
#include "plan/synthetic_profile.h"

namespace sentinel {
namespace {

Plan sample_plan() {
  Plan p;
  p.policy = "sentinel";
  p.period = 4;
  p.events.assign(4, {});
  p.birth_tier[0xdeadbeefcafef00dull] = Tier::kFast;
  p.birth_tier[7] = Tier::kSlow;
  p.events[1] = {{0xdeadbeefcafef00dull, MoveKind::kEvict}, {7, MoveKind::kPrefetch}};
  p.events[3] = {{7, MoveKind::kEvict}, {0xdeadbeefcafef00dull, MoveKind::kPrefetch}};
  p.summary.budget_bytes = 1 << 20;
  p.summary.expected_dram_peak_bytes = 12345;
  p.summary.migrated_bytes_per_step = 999;
  p.summary.prefetches = 2;
  p.summary.evictions = 2;
  p.summary.late_prefetch_risk = 1;
  p.summary.modeled_step_ns = 1.5e6;
  p.summary.budget_insufficient = true;
  p.summary.message = "a \"quoted\" note";
  return p;
}

TEST(PlanIo, RoundTripsEveryField) {
  Plan p = sample_plan();
  std::string text = serialize_plan(p);
  Plan q;
  std::string err;
  ASSERT_TRUE(parse_plan(text, &q, &err)) << err << "\n" << text;
  EXPECT_EQ(q.policy, p.policy);
  EXPECT_EQ(q.period, p.period);
  EXPECT_EQ(q.birth_tier, p.birth_tier);
  EXPECT_EQ(q.events, p.events);
  EXPECT_EQ(q.summary, p.summary);
  EXPECT_NE(text.find("\"0xdeadbeefcafef00d\""), std::string::npos);
}

TEST(PlanIo, FileRoundTripOfARealPlan) {
  StepProfile prof = dnn_training_profile(DnnConfig{});
  ProfileIndex index;
  std::string err;
  ASSERT_TRUE(index.build(prof, &err)) << err;
  MemorySystem mem;
  ASSERT_TRUE(memory_system_preset("cxl", &mem, nullptr));
  mem.fault_ns_per_byte = 0;  // a plan with moves (with the fast pool's fault cost it is static)
  Plan plan;
  ASSERT_TRUE(plan_sentinel(index, mem, PlannerConfig{}, &plan, &err)) << err;
  ASSERT_GT(plan.move_count(), 0u);
  const std::string path = ::testing::TempDir() + "/plan_io_test.json";
  ASSERT_TRUE(write_plan_file(path, plan, &err)) << err;
  Plan back;
  ASSERT_TRUE(read_plan_file(path, &back, &err)) << err;
  EXPECT_EQ(back.events, plan.events);
  EXPECT_EQ(back.birth_tier, plan.birth_tier);
  EXPECT_EQ(back.summary, plan.summary);
  EXPECT_FALSE(read_plan_file(path + ".missing", &back, &err));
  std::remove(path.c_str());
}

TEST(PlanIo, RejectsMalformedDocumentsWithAMessage) {
  const std::string good = serialize_plan(sample_plan());
  struct Case { std::string text; std::string expect; };
  std::vector<Case> cases = {
      {"", "not valid JSON"},
      {"[]", "not an object"},
      {R"({"format": "other", "version": 1})", "format"},
      {R"({"format": "sentinel-plan", "version": 2, "period": 1, "objects": [], "events": []})", "version"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 0, "objects": [], "events": []})", "period"},
      {R"({"format": "sentinel-plan", "version": 1, "period": -3, "objects": [], "events": []})", "period"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 99999999999, "objects": [], "events": []})", "period"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": {}, "events": []})", "objects"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [{"tag": 5, "birth_tier": "fast"}], "events": []})", "tag"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [{"tag": "0xzz", "birth_tier": "fast"}], "events": []})", "tag"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [{"tag": "0x1", "birth_tier": "warm"}], "events": []})", "birth_tier"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [{"tag": "0x1", "birth_tier": "fast"}, {"tag": "0x01", "birth_tier": "slow"}], "events": []})", "duplicate"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [{"tag": "0x1", "birth_tier": "fast"}], "events": [{"event": 2, "moves": []}]})", "event"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [{"tag": "0x1", "birth_tier": "fast"}], "events": [{"event": 1, "moves": [{"op": "copy", "tag": "0x1"}]}]})", "op"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [{"tag": "0x1", "birth_tier": "fast"}], "events": [{"event": 1, "moves": [{"op": "evict", "tag": "0x2"}]}]})", "not listed"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [], "events": [], "summary": {"prefetches": -1}})", "prefetches"},
      {R"({"format": "sentinel-plan", "version": 1, "period": 2, "objects": [], "events": [], "summary": {"message": 3}})", "message"},
      {good.substr(0, good.size() / 2), "not valid JSON"},
  };
  for (const Case& c : cases) {
    Plan out;
    std::string err;
    EXPECT_FALSE(parse_plan(c.text, &out, &err)) << c.text;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "input: " << c.text << "\nerror: " << err;
  }
}

TEST(PlanIo, CorruptedBytesNeverCrash) {
  const std::string good = serialize_plan(sample_plan());
  std::mt19937 rng(42);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string t = good;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[pos] = static_cast<char>(rng() % 256); break;
        case 1: t.erase(pos, 1 + rng() % 8); break;
        default: t.insert(pos, 1, "{}[]\",:0x-9e"[rng() % 12]); break;
      }
      if (t.empty()) t = "x";
    }
    Plan out;
    std::string err;
    if (parse_plan(t, &out, &err)) {
      ++accepted;
      EXPECT_EQ(out.events.size(), out.period);
    } else {
      EXPECT_FALSE(err.empty());
    }
  }
  EXPECT_LT(accepted, 3000);
}

}  // namespace
}  // namespace sentinel
