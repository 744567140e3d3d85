#include "plan/cost_model.h"

#include <gtest/gtest.h>

#include "test_profiles.h"

namespace sentinel {
namespace {

using test::make_profile;
using test::persistent;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPhase = 1'000'000;  // 1 ms

struct Fixture {
  ProfileIndex index;
  MemorySystem mem;
  Fixture(const StepProfile& p) {
    std::string err;
    EXPECT_TRUE(index.build(p, &err)) << err;
    EXPECT_TRUE(memory_system_preset("cxl", &mem, nullptr));
    // The figures below are worked out for a latency-bound tier and a 3.3 GB/s channel.
    mem.stream_share = 0;
    mem.migration_bw_gbps = 3.3;
  }
  Plan plan(Tier birth) const {
    Plan pl;
    pl.period = index.period();
    pl.events.assign(index.period(), {});
    for (const auto& o : index.objects()) pl.birth_tier[o.tag] = birth;
    return pl;
  }
  SimResult run(const Plan& pl, SimOptions opt = {}) const {
    SimResult r;
    std::string err;
    EXPECT_TRUE(simulate_plan(index, pl, mem, opt, &r, &err)) << err;
    return r;
  }
};

TEST(CostModel, AllFastIsTheMeasuredStep) {
  Fixture f(make_profile(4, kPhase, {persistent(1, kMiB, 4, {1})}));
  SimResult r = f.run(f.plan(Tier::kFast));
  EXPECT_DOUBLE_EQ(r.step_ns, 4.0 * kPhase);
  EXPECT_DOUBLE_EQ(r.slow_extra_ns, 0);
  EXPECT_EQ(r.dram_peak_bytes, kMiB);
  EXPECT_EQ(r.migrated_bytes, 0u);
}

TEST(CostModel, StreamedMissesPayNoLatency) {
  Fixture f(make_profile(4, kPhase, {persistent(1, kMiB, 4, {1}, 100000)}));
  f.mem.stream_share = 0.8;
  SimResult r = f.run(f.plan(Tier::kSlow));
  const double lat = 0.2 * 100000.0 * (170.0 - 80.0) / 8.0;  // the fifth not streamed: 0.225 ms
  const double bw = 100000.0 * 64 * (1 / 30.0 - 1 / 80.0);   // 0.133 ms: below it
  ASSERT_LT(bw, lat);
  EXPECT_NEAR(r.slow_extra_ns, lat, 1e-6);
  EXPECT_DOUBLE_EQ(f.mem.latency_delta_ns(), 0.2 * 90.0 / 8.0);
}

TEST(CostModel, SlowAccessesCostTheLatencyTermWhenItDominates) {
  Fixture f(make_profile(4, kPhase, {persistent(1, kMiB, 4, {1}, 100000)}));
  SimResult r = f.run(f.plan(Tier::kSlow));
  const double lat = 100000.0 * (170.0 - 80.0) / 8.0;  // 1.125 ms
  EXPECT_NEAR(r.slow_extra_ns, lat, 1e-6);
  EXPECT_NEAR(r.step_ns, 4.0 * kPhase + lat, 1e-6);
  EXPECT_EQ(r.dram_peak_bytes, 0u);
}

TEST(CostModel, CountsTheAccessesEachTierServes) {
  // Object 1 (read in phases 0 and 2) born slow and prefetched at event 1; object 2 always fast.
  Fixture f(make_profile(4, kPhase, {persistent(1, kMiB, 4, {0, 2}, 1000), persistent(2, kMiB, 4, {1}, 300)}));
  Plan pl = f.plan(Tier::kFast);
  pl.birth_tier[1] = Tier::kSlow;
  SimResult slow = f.run(pl);
  EXPECT_DOUBLE_EQ(slow.slow_reads, 2000);
  EXPECT_DOUBLE_EQ(slow.fast_reads, 300);
  pl.events[1] = {{1, MoveKind::kPrefetch}};
  pl.events[3] = {{1, MoveKind::kEvict}};
  SimResult moved = f.run(pl);
  EXPECT_DOUBLE_EQ(moved.slow_reads, 1000);  // phase 0 only: the prefetch serves phase 2
  EXPECT_DOUBLE_EQ(moved.fast_reads, 1300);
  EXPECT_DOUBLE_EQ(moved.slow_writes + moved.fast_writes, 0);
}

TEST(CostModel, BandwidthTermWinsForStreamingPhases) {
  // 1e6 reads * 64 B at 30 GB/s = 2.13 ms > 1 ms phase; latency term 11.25 ms / 8 ... compute both.
  Fixture f(make_profile(2, kPhase, {persistent(1, 64 * kMiB, 2, {0}, 1'000'000)}));
  f.mem.mlp = 1000;  // latency well hidden: latency term 90 us
  SimResult r = f.run(f.plan(Tier::kSlow));
  const double bw = 1e6 * 64 / 30.0 - kPhase;
  EXPECT_NEAR(r.slow_extra_ns, bw, 1e-3);
}

TEST(CostModel, LatePrefetchStallsAndIsCounted) {
  Fixture f(make_profile(8, kPhase, {persistent(1, 8 * kMiB, 8, {2})}));
  Plan pl = f.plan(Tier::kSlow);
  pl.events[2] = {{1, MoveKind::kPrefetch}};  // issued at the start of the phase that uses it
  pl.events[3] = {{1, MoveKind::kEvict}};
  SimResult r = f.run(pl);
  const double copy = 8.0 * kMiB / 3.3;
  EXPECT_EQ(r.late_prefetches, 1u);
  EXPECT_NEAR(r.stall_ns, copy, 1e-3);
  EXPECT_DOUBLE_EQ(r.slow_extra_ns, 0);  // served from fast memory after the stall
  EXPECT_EQ(r.migrated_bytes, 16 * kMiB);
  EXPECT_EQ(r.migrations, 2u);
  // Issued two phases earlier the 2.54 ms copy is still late, by 0.54 ms.
  pl.events[2].clear();
  pl.events[0] = {{1, MoveKind::kPrefetch}};
  SimResult early = f.run(pl);
  EXPECT_EQ(early.late_prefetches, 1u);
  EXPECT_NEAR(early.stall_ns, copy - 2.0 * kPhase, 1e-3);
  // With 2 MiB-page migration bandwidth (11 GB/s: 0.76 ms) two phases ahead is on time.
  f.mem.migration_bw_gbps = 11.0;
  SimResult fast = f.run(pl);
  EXPECT_EQ(fast.late_prefetches, 0u);
  EXPECT_DOUBLE_EQ(fast.stall_ns, 0);
  EXPECT_NEAR(fast.step_ns, 8.0 * kPhase, 1e-6);
}

TEST(CostModel, InFlightCopiesOccupyFastMemory) {
  // Object 1 evicted at event 1 with a slow channel: it stays resident until its copy is done.
  Fixture f(make_profile(6, kPhase, {persistent(1, 4 * kMiB, 6, {0}), persistent(2, 4 * kMiB, 6, {4})}));
  f.mem.migration_bw_gbps = 4.0 * kMiB / (2.5 * kPhase);  // a copy takes 2.5 phases
  Plan pl = f.plan(Tier::kSlow);
  pl.birth_tier[1] = Tier::kFast;
  pl.events[1] = {{1, MoveKind::kEvict}};
  pl.events[5] = {{1, MoveKind::kPrefetch}};
  SimOptions opt;
  opt.slow_penalty = false;
  opt.stalls = false;
  opt.record_moves = true;
  SimResult r = f.run(pl, opt);
  // Resident in phases 1, 2, 3 (copy ends in phase 3), free in phase 4, back from event 5.
  EXPECT_EQ(r.residency[1], 4 * kMiB);
  EXPECT_EQ(r.residency[3], 4 * kMiB);
  EXPECT_EQ(r.residency[4], 0u);
  EXPECT_EQ(r.residency[5], 4 * kMiB);
  EXPECT_EQ(r.move_busy_phases[0], 3u);
  opt.budget_bytes = 2 * kMiB;
  EXPECT_GT(f.run(pl, opt).budget_violations, 0u);
}

// The fast pool (cost_model.h): freed fast objects park their pages for the next fast births; a prefetch
// with no eviction ahead of it takes its room from parked pages, and a later birth faults them in.
TEST(CostModel, FastPoolChargesTheFaultsOfPagesAPrefetchTookFromParkedOnes) {
  // Object 1 (persistent, slow) prefetched at event 2 for its use in phase 3, evicted at event 4; object 2
  // born fast at event 6, used there, freed at event 7. Both 4 MiB.
  Fixture f(make_profile(8, kPhase, {persistent(1, 4 * kMiB, 8, {3}), test::object(2, 4 * kMiB, 6, 6, {6})}));
  f.mem.fault_ns_per_byte = 0.5;
  Plan pl = f.plan(Tier::kSlow);
  pl.birth_tier[2] = Tier::kFast;
  pl.events[2] = {{1, MoveKind::kPrefetch}};
  pl.events[4] = {{1, MoveKind::kEvict}};
  SimOptions opt;
  opt.pool_bytes = 4 * kMiB;  // one object's worth
  const SimResult tight = f.run(pl, opt);
  // Every step: the prefetch drops object 2's parked pages for its room, object 2 faults them in again.
  EXPECT_EQ(tight.trimmed_bytes, 4 * kMiB);
  EXPECT_EQ(tight.fresh_bytes, 4 * kMiB);
  EXPECT_DOUBLE_EQ(tight.fault_ns, 0.5 * 4 * kMiB);
  const SimResult no_pool = f.run(pl);
  EXPECT_EQ(no_pool.fresh_bytes, 0u);
  EXPECT_DOUBLE_EQ(tight.step_ns - no_pool.step_ns, tight.fault_ns);
  // With room for both, nothing is dropped and the birth finds its parked pages.
  opt.pool_bytes = 8 * kMiB;
  const SimResult roomy = f.run(pl, opt);
  EXPECT_EQ(roomy.trimmed_bytes, 0u);
  EXPECT_EQ(roomy.fresh_bytes, 0u);
  EXPECT_DOUBLE_EQ(roomy.step_ns, no_pool.step_ns);
}

TEST(CostModel, APrefetchBehindAnEvictionTakesTheEvictionsRoom) {
  // Object 3 (persistent, fast) evicted at event 1, object 1 prefetched at event 1 behind it on the one
  // channel: the eviction has given its room back when the prefetch starts. No page is dropped.
  Fixture f(make_profile(8, kPhase, {persistent(1, 4 * kMiB, 8, {3}), persistent(3, 4 * kMiB, 8, {0}),
                                     test::object(2, 4 * kMiB, 6, 6, {6})}));
  Plan pl = f.plan(Tier::kSlow);
  pl.birth_tier[2] = Tier::kFast;
  pl.birth_tier[3] = Tier::kFast;
  pl.events[1] = {{3, MoveKind::kEvict}, {1, MoveKind::kPrefetch}};
  pl.events[4] = {{1, MoveKind::kEvict}};
  pl.events[7] = {{3, MoveKind::kPrefetch}};
  SimOptions opt;
  opt.pool_bytes = 8 * kMiB;
  const SimResult r = f.run(pl, opt);
  EXPECT_EQ(r.trimmed_bytes, 0u);
  EXPECT_EQ(r.fresh_bytes, 0u);
  EXPECT_DOUBLE_EQ(r.fault_ns, 0);
}

TEST(CostModel, APoolThatHoldsThePeakChargesNothing) {
  Fixture f(make_profile(4, kPhase, {test::object(1, 4 * kMiB, 1, 2, {1}), test::object(2, 8 * kMiB, 2, 3, {2})}));
  SimOptions opt;
  opt.pool_bytes = f.index.peak_bytes();  // all-DRAM: no budget
  const SimResult r = f.run(f.plan(Tier::kFast), opt);
  EXPECT_EQ(r.fresh_bytes, 0u);
  EXPECT_DOUBLE_EQ(r.step_ns, 4.0 * kPhase);
}

TEST(CostModel, RejectsPlansThatDoNotMatch) {
  Fixture f(make_profile(4, kPhase, {persistent(1, kMiB, 4, {1})}));
  Plan pl = f.plan(Tier::kFast);
  pl.period = 5;
  pl.events.resize(5);
  SimResult r;
  std::string err;
  EXPECT_FALSE(simulate_plan(f.index, pl, f.mem, {}, &r, &err));
  EXPECT_NE(err.find("period"), std::string::npos);
  pl = f.plan(Tier::kFast);
  pl.events[0] = {{99, MoveKind::kEvict}};
  EXPECT_FALSE(simulate_plan(f.index, pl, f.mem, {}, &r, &err));
  EXPECT_NE(err.find("unknown tag"), std::string::npos);
}

}  // namespace
}  // namespace sentinel
