// The fast pool as the cost model replays it (plan/fast_pool_model.h): by size class and extent by extent,
// as the runtime parks and trims extents (preload/runtime.cc, core/object_heap.h).
#include "plan/fast_pool_model.h"

#include <gtest/gtest.h>

namespace sentinel {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

// A pool whose births and frees name their objects by number.
struct Pool {
  explicit Pool(uint64_t capacity) : model(capacity) {}
  uint64_t birth(int n, uint64_t size) { return model.birth(size, &held[n]); }
  void free(int n) { model.free(held[n]); }
  FastPoolModel model;
  FastPoolModel::Extent held[8];
};

TEST(FastPoolModel, AnObjectHoldsTheExtentOfItsSizeClass) {
  EXPECT_EQ(FastPoolModel::extent_bytes(1), 4 * kKiB);
  EXPECT_EQ(FastPoolModel::extent_bytes(64 * kKiB), 64 * kKiB);
  EXPECT_EQ(FastPoolModel::extent_bytes(1000 * kKiB), kMiB);  // 8 classes per doubling above 16 pages
  EXPECT_EQ(FastPoolModel::extent_bytes(4 * kMiB + 1), 4 * kMiB + 512 * kKiB);
}

TEST(FastPoolModel, ABirthReusesAParkedExtentOfItsClassOrOneUpToTwiceItsSize) {
  Pool pool(16 * kMiB);
  EXPECT_EQ(pool.birth(0, kMiB), kMiB);  // nothing parked: faulted in
  pool.free(0);
  EXPECT_EQ(pool.model.parked_bytes(), kMiB);
  EXPECT_EQ(pool.birth(1, kMiB), 0u);  // its class
  pool.free(1);
  EXPECT_EQ(pool.birth(2, 600 * kKiB), 0u);  // 1 MiB is at most twice its 640 KiB extent
  EXPECT_EQ(pool.model.parked_bytes(), 0u);
  EXPECT_EQ(pool.model.live_bytes(), kMiB);  // it keeps, and counts, all the extent's pages
  EXPECT_EQ(pool.held[2].charge, kMiB);
  pool.free(2);
  // The 1 MiB extent is parked again with all its pages: the next 1 MiB birth faults nothing in.
  EXPECT_EQ(pool.model.parked_bytes(), kMiB);
  EXPECT_EQ(pool.birth(4, kMiB), 0u);
  EXPECT_EQ(pool.model.live_bytes(), kMiB);
  pool.free(4);
  EXPECT_EQ(pool.birth(5, 256 * kKiB), 256 * kKiB);  // 1 MiB is more than twice 256 KiB: not taken
  EXPECT_EQ(pool.birth(6, 2 * kMiB), 2 * kMiB);      // a larger class: never a smaller extent
  EXPECT_EQ(pool.model.parked_bytes(), kMiB);
}

// Parked bytes of other classes do not spare a birth its faults (the model before counted them as pages for
// any birth): it makes room by dropping whole extents, the smallest class that covers the shortfall first.
TEST(FastPoolModel, ABirthWithoutItsClassDropsWholeExtentsForRoomAndFaultsItsPagesIn) {
  Pool pool(8 * kMiB);
  pool.model.add_live(4 * kMiB, &pool.held[7]);
  pool.birth(0, kMiB);
  pool.birth(1, 2 * kMiB);
  pool.free(0);
  pool.free(1);
  ASSERT_EQ(pool.model.parked_bytes(), 3 * kMiB);
  // 3 MiB: 2 MiB short (4 live + 3 parked + 3 > 8); the 2 MiB extent covers it alone.
  EXPECT_EQ(pool.birth(2, 3 * kMiB), 3 * kMiB);
  EXPECT_EQ(pool.model.parked_bytes(), kMiB);
  EXPECT_EQ(pool.model.live_bytes(), 7 * kMiB);
}

TEST(FastPoolModel, ParkedPagesThatCannotMakeRoomAreKept) {
  Pool pool(4 * kMiB);
  pool.model.add_live(3 * kMiB, &pool.held[7]);
  pool.birth(0, 512 * kKiB);
  pool.free(0);
  // 2 MiB: 1.5 MiB short with 512 KiB parked: nothing is dropped (the runtime sends it slow).
  pool.birth(1, 2 * kMiB);
  EXPECT_EQ(pool.model.parked_bytes(), 512 * kKiB);
}

TEST(FastPoolModel, WithNoExtentCoveringTheShortfallTheLargestClassesGoFirst) {
  Pool pool(4 * kMiB);
  for (int k = 0; k < 4; ++k) pool.birth(k, 256 * kKiB);
  pool.birth(4, kMiB);
  for (int k = 0; k < 5; ++k) pool.free(k);
  ASSERT_EQ(pool.model.parked_bytes(), 2 * kMiB);
  // 3.5 MiB: 1.5 MiB short; no one extent covers it: the 1 MiB one, then two of 256 KiB.
  FastPoolModel::Extent prefetched;
  EXPECT_EQ(pool.model.arrive(3 * kMiB + 512 * kKiB, 0, &prefetched), 1536 * kKiB);
  EXPECT_EQ(pool.model.parked_bytes(), 512 * kKiB);
}

// A prefetch's room when it starts: the evictions queued ahead of it give theirs back first.
TEST(FastPoolModel, APrefetchCountsTheEvictionsAheadOfItAsGone) {
  Pool pool(4 * kMiB);
  pool.model.add_live(2 * kMiB, &pool.held[7]);
  pool.birth(0, 2 * kMiB);
  pool.free(0);
  FastPoolModel::Extent prefetched;
  EXPECT_EQ(pool.model.arrive(2 * kMiB, 2 * kMiB, &prefetched), 0u);  // the eviction of the live 2 MiB runs first
  pool.model.leave(pool.held[7]);
  EXPECT_EQ(pool.model.live_bytes(), 2 * kMiB);
  EXPECT_EQ(pool.model.parked_bytes(), 2 * kMiB);
}

// The pages a smaller birth keeps hold budget: once a birth finds no room (the runtime sends it slow), the
// pool drops the pages past a smaller birth's class from then on, as the runtime does.
TEST(FastPoolModel, OnceABirthFindsNoRoomTheTailsOfLargerExtentsAreDropped) {
  Pool pool(4 * kMiB);
  pool.birth(0, 2 * kMiB);
  pool.free(0);
  pool.birth(1, 1200 * kKiB);
  EXPECT_EQ(pool.held[1].charge, 2 * kMiB);
  EXPECT_TRUE(pool.model.keeps_tails());
  pool.birth(2, 2560 * kKiB);  // 2 MiB live, nothing parked: 2.5 MiB does not fit in 4 MiB
  EXPECT_FALSE(pool.model.keeps_tails());
  pool.free(1);
  EXPECT_EQ(pool.birth(3, 1200 * kKiB), 0u);
  EXPECT_EQ(pool.held[3].charge, 1280 * kKiB);  // its 1.25 MiB class
  EXPECT_EQ(pool.model.tails_dropped_bytes(), 768 * kKiB);
  EXPECT_EQ(pool.model.parked_bytes(), 0u);
}

// An object born fast in a larger parked extent, evicted and prefetched again, counts that extent's charge
// when it comes back, as the runtime's record does; one born slow comes in an extent of its class.
TEST(FastPoolModel, APrefetchedObjectCountsTheExtentItHeld) {
  Pool pool(8 * kMiB);
  pool.birth(0, kMiB);
  pool.free(0);
  pool.birth(1, 600 * kKiB);
  ASSERT_EQ(pool.held[1].charge, kMiB);
  pool.model.leave(pool.held[1]);
  EXPECT_EQ(pool.model.live_bytes(), 0u);
  pool.model.arrive(600 * kKiB, 0, &pool.held[1]);
  EXPECT_EQ(pool.model.live_bytes(), kMiB);
  FastPoolModel::Extent born_slow;
  pool.model.arrive(600 * kKiB, 0, &born_slow);
  EXPECT_EQ(born_slow.charge, 640 * kKiB);
  EXPECT_EQ(pool.model.live_bytes(), kMiB + 640 * kKiB);
}

}  // namespace
}  // namespace sentinel
