// Single-threaded behaviour of BudgetPlacer: budget parsing, the fast-then-slow policy, percentage
// budgets before and after the step peak is known, release accounting and the disabled mode.
#include "place/budget_placer.h"

#include <gtest/gtest.h>

#include "core/object_heap.h"

namespace sentinel::place {
namespace {

constexpr uint64_t K = 1024;
constexpr uint64_t M = 1024 * K;

TEST(ExtentBytesFor, MatchesTheObjectHeap) {
  ObjectHeap heap;
  ASSERT_TRUE(heap.init(1ull << 30, 1024));
  for (uint64_t size : {64 * K, 64 * K + 1, 100 * K, 1 * M, 2 * M - 1, 2 * M, 3 * M + 17, 37 * M}) {
    bool zeroed = false;
    const uint32_t slot = heap.allocate(size, kPageSize, 0, &zeroed);
    ASSERT_NE(slot, kNoSlot) << size;
    EXPECT_EQ(heap.record(slot).extent_bytes, extent_bytes_for(size)) << size;
    heap.release(slot);
  }
  heap.destroy();
}

PlacerConfig two_nodes(BudgetSpec budget) {
  PlacerConfig c;
  c.fast_node = 0;
  c.slow_node = 1;
  c.budget = budget;
  return c;
}

TEST(BudgetPlacer, ConfigureRejectsBadInput) {
  BudgetPlacer p;
  PlacerConfig c = two_nodes({});
  c.slow_node = 0;
  const Status same_nodes = p.configure(c);
  EXPECT_FALSE(same_nodes.is_ok());
  EXPECT_STRNE(same_nodes.message(), "");
  c = two_nodes({BudgetKind::kPercent, 0, 0});
  EXPECT_FALSE(p.configure(c).is_ok());
  c = two_nodes({BudgetKind::kPercent, 0, 1000001});
  EXPECT_FALSE(p.configure(c).is_ok());
  c = two_nodes({});
  c.fast_node = -1;
  EXPECT_FALSE(p.configure(c).is_ok());
}

TEST(BudgetPlacer, FastWhileTheBudgetAllowsThenSlow) {
  BudgetPlacer p;
  const Status configured = p.configure(two_nodes({BudgetKind::kBytes, 1 * M, 0}));
  ASSERT_TRUE(configured.is_ok()) << configured.message();
  EXPECT_TRUE(p.enabled());
  EXPECT_EQ(p.budget_bytes(), 1 * M);
  for (int i = 0; i < 4; ++i) {
    const Decision d = p.choose(256 * K);
    EXPECT_EQ(d.pool, kFastPool);
    EXPECT_EQ(d.node, 0);
    EXPECT_FALSE(d.forced_slow);
  }
  Decision d = p.choose(4 * K);  // exactly full: even one page does not fit
  EXPECT_EQ(d.pool, kSlowPool);
  EXPECT_EQ(d.node, 1);
  EXPECT_TRUE(d.forced_slow);
  p.release(kFastPool, 256 * K);
  d = p.choose(512 * K);  // 768K + 512K > 1M
  EXPECT_EQ(d.pool, kSlowPool);
  d = p.choose(256 * K);  // exact fit is allowed
  EXPECT_EQ(d.pool, kFastPool);

  const PlacerStats s = p.stats();
  EXPECT_EQ(s.fast_live_bytes, 1 * M);
  EXPECT_EQ(s.slow_live_bytes, 512 * K + 4 * K);
  EXPECT_EQ(s.peak_fast_bytes, 1 * M);
  EXPECT_EQ(s.peak_slow_bytes, 516 * K);
  EXPECT_EQ(s.fast_allocations, 5u);
  EXPECT_EQ(s.slow_allocations, 2u);
  EXPECT_EQ(s.forced_slow_allocations, 2u);
  EXPECT_TRUE(s.budget_resolved);
  EXPECT_EQ(s.budget_bytes, 1 * M);
  EXPECT_EQ(s.release_errors, 0u);
}

TEST(BudgetPlacer, ZeroBudgetSendsEverythingSlow) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kBytes, 0, 0})).is_ok());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p.choose(64 * K).pool, kSlowPool);
  EXPECT_EQ(p.stats().peak_fast_bytes, 0u);
  EXPECT_EQ(p.stats().forced_slow_allocations, 10u);
}

TEST(BudgetPlacer, UnlimitedBudgetKeepsEverythingFast) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({})).is_ok());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p.choose(64 * M).pool, kFastPool);
  EXPECT_EQ(p.stats().forced_slow_allocations, 0u);
  EXPECT_EQ(p.stats().peak_fast_bytes, 640 * M);
}

TEST(BudgetPlacer, DisabledWithoutSlowNode) {
  BudgetPlacer p;
  PlacerConfig c = two_nodes({BudgetKind::kBytes, 0, 0});
  c.slow_node = -1;
  ASSERT_TRUE(p.configure(c).is_ok());
  EXPECT_FALSE(p.enabled());
  const Decision d = p.choose(1 * M);
  EXPECT_EQ(d.pool, kFastPool);
  EXPECT_EQ(d.node, 0);
  EXPECT_EQ(p.node_of_pool(kSlowPool), -1);
  p.release(kFastPool, 1 * M);
  p.release(kSlowPool, 1 * M);  // there is no slow pool
  EXPECT_EQ(p.stats().release_errors, 1u);
  EXPECT_EQ(p.stats().fast_live_bytes, 0u);
}

// Before the step peak is known, a percentage budget is p% of the live peak seen so far.
// The Status form of configure: invalid input is a failure with its reason.
TEST(BudgetPlacer, InvalidNodesAreAFailingStatus) {
  BudgetPlacer p;
  PlacerConfig same = two_nodes(BudgetSpec{});
  same.slow_node = same.fast_node;
  const Status s = p.configure(same);
  EXPECT_FALSE(s.is_ok());
  EXPECT_STREQ(s.message(), "fast and slow node are the same");
  EXPECT_TRUE(p.configure(two_nodes(BudgetSpec{})).is_ok());
}

TEST(BudgetPlacer, PercentageFollowsThePeakUntilAStepIsKnown) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kPercent, 0, 500000})).is_ok());  // 50%
  EXPECT_FALSE(p.stats().budget_resolved);
  EXPECT_EQ(p.budget_bytes(), 0u);
  EXPECT_EQ(p.choose(100 * K).pool, kSlowPool);  // peak 100K, budget 50K
  EXPECT_EQ(p.choose(100 * K).pool, kFastPool);  // peak 200K, budget 100K
  EXPECT_EQ(p.choose(100 * K).pool, kSlowPool);  // peak 300K, budget 150K, fast would be 200K
  EXPECT_EQ(p.budget_bytes(), 150 * K);
  // Frees lower the live bytes, not the peak: the budget does not shrink.
  p.release(kSlowPool, 100 * K);
  p.release(kSlowPool, 100 * K);
  EXPECT_EQ(p.budget_bytes(), 150 * K);
  EXPECT_EQ(p.choose(40 * K).pool, kFastPool);  // 140K <= 150K

  p.update_peak(1 * M);
  PlacerStats s = p.stats();
  EXPECT_TRUE(s.budget_resolved);
  EXPECT_EQ(s.budget_bytes, 512 * K);
  EXPECT_EQ(s.budget_percent_ppm, 500000u);
  p.update_peak(10 * K);  // lower peaks change nothing
  EXPECT_EQ(p.budget_bytes(), 512 * K);
  EXPECT_EQ(p.choose(300 * K).pool, kFastPool);  // 440K <= 512K
  EXPECT_EQ(p.choose(100 * K).pool, kSlowPool);  // 540K > 512K
  s = p.stats();
  EXPECT_LE(s.peak_fast_bytes, s.budget_bytes);
}

// Parked bytes (freed fast extents that keep their pages) count against the budget until reused or
// dropped, and are not live objects: a percentage budget's peak and the live figure leave them out.
TEST(BudgetPlacer, ParkedBytesStayInTheBudgetUntilReusedOrDropped) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kBytes, 1 * M, 0})).is_ok());
  ASSERT_EQ(p.choose(512 * K).pool, kFastPool);
  ASSERT_EQ(p.choose(256 * K).pool, kFastPool);
  p.park_fast(512 * K);
  PlacerStats s = p.stats();
  EXPECT_EQ(s.fast_live_bytes, 256 * K);
  EXPECT_EQ(s.fast_parked_bytes, 512 * K);
  EXPECT_EQ(p.fast_shortfall(256 * K), 0u);
  EXPECT_EQ(p.fast_shortfall(512 * K), 256 * K);
  EXPECT_EQ(p.choose(512 * K).pool, kSlowPool) << "the parked bytes still hold fast memory";
  // Reuse: no new reservation, the bytes move from parked to live.
  const Decision d = p.reuse_parked_fast(512 * K);
  EXPECT_EQ(d.pool, kFastPool);
  EXPECT_EQ(d.node, 0);
  s = p.stats();
  EXPECT_EQ(s.fast_live_bytes, 768 * K);
  EXPECT_EQ(s.fast_parked_bytes, 0u);
  EXPECT_EQ(s.parked_reuses, 1u);
  EXPECT_EQ(s.peak_fast_bytes, 768 * K);
  // Dropped for room: the bytes leave the budget and a new reservation fits.
  p.park_fast(512 * K);
  p.unpark_fast(512 * K, /*trimmed_for_room=*/true);
  s = p.stats();
  EXPECT_EQ(s.fast_parked_bytes, 0u);
  EXPECT_EQ(s.parked_trimmed_bytes, 512 * K);
  EXPECT_EQ(s.fast_live_bytes, 256 * K);
  EXPECT_EQ(p.choose(768 * K).pool, kFastPool);
  EXPECT_LE(p.stats().peak_fast_bytes, 1 * M);
  EXPECT_EQ(p.stats().release_errors, 0u);
}

TEST(BudgetPlacer, ParkedBytesAreNotLiveForAPercentageBudget) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kPercent, 0, 500000})).is_ok());  // 50%
  EXPECT_EQ(p.choose(100 * K).pool, kSlowPool);  // peak 100K, budget 50K
  EXPECT_EQ(p.choose(100 * K).pool, kFastPool);  // peak 200K, budget 100K
  p.park_fast(100 * K);
  p.release(kSlowPool, 100 * K);
  // Live is 0 now; a reuse counts 100K live again and the peak stays 200K.
  EXPECT_EQ(p.reuse_parked_fast(100 * K).pool, kFastPool);
  EXPECT_EQ(p.stats().peak_total_bytes, 200 * K);
  EXPECT_EQ(p.stats().fast_live_bytes, 100 * K);
}

TEST(BudgetPlacer, ReleaseNeverWrapsAround) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kBytes, 1 * M, 0})).is_ok());
  EXPECT_EQ(p.choose(64 * K).pool, kFastPool);
  p.release(kFastPool, 128 * K);
  p.release(7, 64 * K);
  const PlacerStats s = p.stats();
  EXPECT_EQ(s.fast_live_bytes, 0u);
  EXPECT_EQ(s.release_errors, 2u);
  // A wrapped counter would refuse everything; a clamped one still admits up to the budget.
  EXPECT_EQ(p.choose(1 * M).pool, kFastPool);
}

TEST(BudgetPlacer, ConfigureResetsCounters) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kBytes, 0, 0})).is_ok());
  p.choose(64 * K);
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kBytes, 1 * M, 0})).is_ok());
  const PlacerStats s = p.stats();
  EXPECT_EQ(s.slow_live_bytes, 0u);
  EXPECT_EQ(s.forced_slow_allocations, 0u);
  EXPECT_EQ(s.peak_slow_bytes, 0u);
}

// The runtime keeps its placer in constant-initialised global state.
constinit BudgetPlacer g_placer;

// A refused bind: the object's bytes follow its pages to the other pool. Into a full fast pool they
// are counted anyway (the pages are there), and counted again as over budget; the books balance.
TEST(BudgetPlacer, RehomeMovesTheBytesToThePoolThePagesAreIn) {
  BudgetPlacer p;
  ASSERT_TRUE(p.configure(two_nodes({BudgetKind::kBytes, 1 * M, 0})).is_ok());
  EXPECT_EQ(p.pool_of_node(0), kFastPool);
  EXPECT_EQ(p.pool_of_node(1), kSlowPool);
  EXPECT_EQ(p.pool_of_node(2), kNoPool);
  const Decision a = p.choose(512 * K);
  ASSERT_EQ(a.pool, kFastPool);
  p.rehome(kFastPool, kSlowPool, 512 * K);  // a fast choice whose extent stayed slow
  PlacerStats s = p.stats();
  EXPECT_EQ(s.fast_live_bytes, 0u);
  EXPECT_EQ(s.slow_live_bytes, 512 * K);
  const Decision b = p.choose(768 * K, Want::kSlow);
  ASSERT_EQ(b.pool, kSlowPool);
  p.rehome(kSlowPool, kFastPool, 768 * K);  // fits
  const Decision c = p.choose(512 * K, Want::kSlow);
  p.rehome(c.pool, kFastPool, 512 * K);  // does not fit: counted fast all the same
  s = p.stats();
  EXPECT_EQ(s.fast_live_bytes, 1280 * K);
  EXPECT_EQ(s.slow_live_bytes, 512 * K);
  EXPECT_EQ(s.binds_rehomed, 3u);
  EXPECT_EQ(s.binds_over_budget, 1u);
  p.rehome(kFastPool, kFastPool, 4 * K);  // nothing to do
  EXPECT_EQ(p.stats().binds_rehomed, 3u);
  p.release(kSlowPool, 512 * K);
  p.release(kFastPool, 768 * K);
  p.release(kFastPool, 512 * K);
  s = p.stats();
  EXPECT_EQ(s.fast_live_bytes, 0u);
  EXPECT_EQ(s.slow_live_bytes, 0u);
  EXPECT_EQ(s.release_errors, 0u);
}

TEST(BudgetPlacer, ConstantInitialisable) {
  EXPECT_FALSE(g_placer.enabled());
  ASSERT_TRUE(g_placer.configure(two_nodes({BudgetKind::kBytes, 64 * K, 0})).is_ok());
  EXPECT_EQ(g_placer.choose(64 * K).pool, kFastPool);
  EXPECT_EQ(g_placer.choose(64 * K).pool, kSlowPool);
}

}  // namespace
}  // namespace sentinel::place
