// The fast pool as the cost model replays it (plan/fast_pool_model.h): by size class, as the runtime parks
// and trims extents (preload/runtime.cc, core/object_heap.h).
#include "plan/fast_pool_model.h"

#include <gtest/gtest.h>

namespace sentinel {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

TEST(FastPoolModel, AnObjectHoldsTheExtentOfItsSizeClass) {
  EXPECT_EQ(FastPoolModel::extent_bytes(1), 4 * kKiB);
  EXPECT_EQ(FastPoolModel::extent_bytes(64 * kKiB), 64 * kKiB);
  EXPECT_EQ(FastPoolModel::extent_bytes(1000 * kKiB), kMiB);  // 8 classes per doubling above 16 pages
  EXPECT_EQ(FastPoolModel::extent_bytes(4 * kMiB + 1), 4 * kMiB + 512 * kKiB);
}

TEST(FastPoolModel, ABirthReusesAParkedExtentOfItsClassOrOneUpToTwiceItsSize) {
  FastPoolModel pool(16 * kMiB);
  EXPECT_EQ(pool.birth(kMiB), kMiB);  // nothing parked: faulted in
  pool.free(kMiB);
  EXPECT_EQ(pool.parked_bytes(), kMiB);
  EXPECT_EQ(pool.birth(kMiB), 0u);  // its class
  pool.free(kMiB);
  EXPECT_EQ(pool.birth(600 * kKiB), 0u);  // 1 MiB is at most twice its 640 KiB extent
  EXPECT_EQ(pool.parked_bytes(), 0u);
  EXPECT_EQ(pool.live_bytes(), 640 * kKiB);  // the tail past its class is dropped
  pool.free(600 * kKiB);
  EXPECT_EQ(pool.birth(256 * kKiB), 256 * kKiB);  // 640 KiB is more than twice 256: not taken
  EXPECT_EQ(pool.birth(2 * kMiB), 2 * kMiB);      // a larger class: never a smaller extent
  EXPECT_EQ(pool.parked_bytes(), 640 * kKiB);
}

// Parked bytes of other classes do not spare a birth its faults (the model before counted them as pages for
// any birth): it makes room by dropping whole extents, the smallest class that covers the shortfall first.
TEST(FastPoolModel, ABirthWithoutItsClassDropsWholeExtentsForRoomAndFaultsItsPagesIn) {
  FastPoolModel pool(8 * kMiB);
  pool.add_live(4 * kMiB);
  pool.birth(kMiB);
  pool.birth(2 * kMiB);
  pool.free(kMiB);
  pool.free(2 * kMiB);
  ASSERT_EQ(pool.parked_bytes(), 3 * kMiB);
  // 3 MiB: 2 MiB short (4 live + 3 parked + 3 > 8); the 2 MiB extent covers it alone.
  EXPECT_EQ(pool.birth(3 * kMiB), 3 * kMiB);
  EXPECT_EQ(pool.parked_bytes(), kMiB);
  EXPECT_EQ(pool.live_bytes(), 7 * kMiB);
}

TEST(FastPoolModel, ParkedPagesThatCannotMakeRoomAreKept) {
  FastPoolModel pool(4 * kMiB);
  pool.add_live(3 * kMiB);
  pool.birth(512 * kKiB);
  pool.free(512 * kKiB);
  // 2 MiB: 1.5 MiB short with 512 KiB parked: nothing is dropped (the runtime sends it slow).
  pool.birth(2 * kMiB);
  EXPECT_EQ(pool.parked_bytes(), 512 * kKiB);
}

TEST(FastPoolModel, WithNoExtentCoveringTheShortfallTheLargestClassesGoFirst) {
  FastPoolModel pool(4 * kMiB);
  for (int k = 0; k < 4; ++k) pool.birth(256 * kKiB);
  pool.birth(kMiB);
  for (int k = 0; k < 4; ++k) pool.free(256 * kKiB);
  pool.free(kMiB);
  ASSERT_EQ(pool.parked_bytes(), 2 * kMiB);
  // 3.5 MiB: 1.5 MiB short; no one extent covers it: the 1 MiB one, then two of 256 KiB.
  EXPECT_EQ(pool.arrive(3 * kMiB + 512 * kKiB, 0), 1536 * kKiB);
  EXPECT_EQ(pool.parked_bytes(), 512 * kKiB);
}

// A prefetch's room when it starts: the evictions queued ahead of it give theirs back first.
TEST(FastPoolModel, APrefetchCountsTheEvictionsAheadOfItAsGone) {
  FastPoolModel pool(4 * kMiB);
  pool.add_live(2 * kMiB);
  pool.birth(2 * kMiB);
  pool.free(2 * kMiB);
  EXPECT_EQ(pool.arrive(2 * kMiB, 2 * kMiB), 0u);  // the eviction of the live 2 MiB runs first
  pool.leave(2 * kMiB);
  EXPECT_EQ(pool.live_bytes(), 2 * kMiB);
  EXPECT_EQ(pool.parked_bytes(), 2 * kMiB);
}

}  // namespace
}  // namespace sentinel
