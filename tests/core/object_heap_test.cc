#include "core/object_heap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace sentinel {
namespace {

class ObjectHeapTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(heap_.init(4ull << 30, 1u << 16)); }
  void TearDown() override { heap_.destroy(); }
  uint32_t alloc(uint64_t size, uint64_t align = kPageSize, uint8_t pool = 0) {
    bool zeroed;
    return heap_.allocate(size, align, pool, &zeroed);
  }
  ObjectHeap heap_;
};

TEST(SizeClass, RoundsUpByAtMostOneEighthAndIsMonotonic) {
  uint32_t last = 0;
  for (uint64_t pages = 1; pages < (1u << 20); pages += 1 + pages / 64) {
    const uint32_t cls = size_class_of_pages(pages);
    ASSERT_GE(cls, last);
    last = cls;
    ASSERT_LT(cls, kNumSizeClasses);
    const uint64_t got = class_pages(cls);
    ASSERT_GE(got, pages);
    ASSERT_LE(got * 8, pages * 9 + 8) << pages;
    ASSERT_EQ(size_class_of_pages(got), cls);  // a class's own size maps to itself
  }
}

TEST_F(ObjectHeapTest, ExtentsArePageAlignedAndShareNoPage) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (uint64_t size : {65536ull, 65537ull, 100000ull, 1ull << 20, 3ull << 20, 5000000ull}) {
    const uint32_t slot = alloc(size);
    ASSERT_NE(slot, kNoSlot);
    const ObjectRecord& r = heap_.record(slot);
    EXPECT_EQ(r.start % kPageSize, 0u);
    EXPECT_GE(r.extent_bytes, size);
    if (size >= kHugePageSize) {
      EXPECT_EQ(r.start % kHugePageSize, 0u);
    }
    EXPECT_EQ(heap_.slot_of(reinterpret_cast<void*>(r.start)), slot);
    EXPECT_EQ(heap_.slot_of(reinterpret_cast<void*>(r.start + kPageSize)), kNoSlot);
    ranges.emplace_back(r.start, r.start + r.extent_bytes);
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    for (size_t j = i + 1; j < ranges.size(); ++j) {
      const uintptr_t a_last_page = (ranges[i].second - 1) / kPageSize;
      const uintptr_t b_last_page = (ranges[j].second - 1) / kPageSize;
      const bool disjoint =
          a_last_page < ranges[j].first / kPageSize || b_last_page < ranges[i].first / kPageSize;
      EXPECT_TRUE(disjoint) << i << " " << j;
    }
  }
}

TEST_F(ObjectHeapTest, FreedExtentIsReusedForSameClassOwnPoolFirst) {
  const uint32_t a = alloc(200000);
  const uintptr_t start = heap_.record(a).start;
  const uint32_t b = alloc(200000, kPageSize, 1);
  const uintptr_t start_b = heap_.record(b).start;
  heap_.release(a);
  heap_.release(b);
  const uint32_t other_class = alloc(1000000);
  EXPECT_NE(heap_.record(other_class).start, start);
  const uint32_t again = alloc(199000);  // same class, pool 0: its own extent, not pool 1's
  EXPECT_EQ(heap_.record(again).start, start);
  const uint32_t again_b = alloc(199000, kPageSize, 1);
  EXPECT_EQ(heap_.record(again_b).start, start_b);
  EXPECT_EQ(heap_.stats().extents_reused, 2u);
  EXPECT_EQ(heap_.stats().extents_from_other_pool, 0u);
}

// Moves change an extent's pool, so one pool's cache can hold the extents the other's births need: an
// allocation takes one from another pool (pages returned, so it reads as zeros) before it carves.
TEST_F(ObjectHeapTest, TakesAnotherPoolsExtentBeforeCarving) {
  const uint32_t a = alloc(200000);
  char* p = reinterpret_cast<char*>(heap_.record(a).start);
  std::memset(p, 0xab, 200000);
  heap_.release(a);
  const uint64_t carved = heap_.stats().extents_carved;
  bool zeroed = false;
  uint8_t from = 0;
  bool was_resident = false;
  const uint32_t b = heap_.allocate(199000, kPageSize, 1, &zeroed, false, &from, &was_resident);
  ASSERT_NE(b, kNoSlot);
  EXPECT_EQ(heap_.record(b).start, reinterpret_cast<uintptr_t>(p));
  EXPECT_EQ(heap_.stats().extents_carved, carved) << "no new extent while another pool caches one";
  EXPECT_EQ(heap_.stats().extents_from_other_pool, 1u);
  EXPECT_EQ(from, 0);
  EXPECT_TRUE(was_resident);
  EXPECT_EQ(heap_.record(b).pool.load(), 1);
  EXPECT_TRUE(zeroed) << "its pages were returned";
  for (int i = 0; i < 200000; i += 4096) ASSERT_EQ(p[i], 0) << i;
  EXPECT_EQ(heap_.stats().cached_resident_bytes, 0u);
  // take_resident never looks at another pool.
  heap_.release(b);
  EXPECT_EQ(heap_.take_resident(199000, kPageSize, 0, 0), kNoSlot);
}

TEST_F(ObjectHeapTest, TakesAnotherPoolsReturnedExtentBeforeItsResidentOne) {
  const uint32_t resident = alloc(200000, kPageSize, 1);
  const uint32_t returned = alloc(200000, kPageSize, 2);
  const uintptr_t returned_start = heap_.record(returned).start;
  heap_.release(resident);
  heap_.release(returned, /*drop_pages=*/true);
  bool zeroed = false;
  uint8_t from = 0;
  bool was_resident = true;
  const uint32_t c = heap_.allocate(200000, kPageSize, 0, &zeroed, false, &from, &was_resident);
  EXPECT_EQ(heap_.record(c).start, returned_start);
  EXPECT_EQ(from, 2);
  EXPECT_FALSE(was_resident);
  EXPECT_EQ(heap_.stats().cached_resident_bytes, heap_.record(resident).extent_bytes) << "pool 1 keeps its pages";
}

TEST_F(ObjectHeapTest, ReportsWhetherMemoryIsZero) {
  bool zeroed = false;
  uint32_t s = heap_.allocate(100000, kPageSize, 0, &zeroed);
  EXPECT_TRUE(zeroed);
  std::memset(reinterpret_cast<void*>(heap_.record(s).start), 0xab, 100000);
  heap_.set_resident_limit(1ull << 30);
  heap_.release(s);
  s = heap_.allocate(100000, kPageSize, 0, &zeroed);
  EXPECT_FALSE(zeroed);  // recycled while resident: dirty
  heap_.set_resident_limit(0);
  heap_.release(s);  // trimmed: the kernel gives zero pages back
  s = heap_.allocate(100000, kPageSize, 0, &zeroed);
  EXPECT_TRUE(zeroed);
  const auto* bytes = reinterpret_cast<const unsigned char*>(heap_.record(s).start);
  for (int i = 0; i < 100000; i += 4096) ASSERT_EQ(bytes[i], 0);
  EXPECT_EQ(heap_.stats().extents_trimmed, 1u);
}

// The limit bounds the heap's resident bytes (live extents and kept cached ones), not the cache alone: a
// step whose live set falls to nothing keeps what it frees while the heap stays within the limit, and
// only a free made while the heap is above it drops its pages.
TEST_F(ObjectHeapTest, TheResidentLimitBoundsTheWholeHeapNotTheCache) {
  const uint32_t a = alloc(100000), b = alloc(100000);
  const uint64_t extent = heap_.record(a).extent_bytes;
  heap_.set_resident_limit(2 * extent);
  EXPECT_EQ(heap_.stats().resident_bytes(), 2 * extent);
  EXPECT_TRUE(heap_.release(a));
  EXPECT_TRUE(heap_.release(b)) << "the cache holds 2 extents, the heap no more than before";
  EXPECT_EQ(heap_.stats().cached_resident_bytes, 2 * extent);
  EXPECT_EQ(heap_.stats().resident_bytes(), 2 * extent);
  // A live set that grows past the limit without reusing them: the next free drops its pages.
  const uint32_t c = alloc(300000);
  EXPECT_GT(heap_.stats().resident_bytes(), 2 * extent);
  EXPECT_FALSE(heap_.release(c));
  EXPECT_EQ(heap_.stats().extents_trimmed, 1u);
  EXPECT_EQ(heap_.stats().resident_bytes(), 2 * extent);
  EXPECT_EQ(heap_.stats().cached_resident_bytes, 2 * extent) << "the two kept extents were not touched";
}

// peak_resident_bytes: the most the heap held resident after any allocation, cached extents included
// (what it adds to the process's RSS); a free never raises it, reusing a cached extent does not either.
TEST_F(ObjectHeapTest, PeakResidentCountsCachedExtentsAtTheMomentOfThePeak) {
  heap_.set_resident_limit(1ull << 30);
  const uint32_t a = alloc(100000);
  const uint64_t extent = heap_.record(a).extent_bytes;
  EXPECT_EQ(heap_.stats().peak_resident_bytes, extent);
  EXPECT_TRUE(heap_.release(a));
  EXPECT_EQ(heap_.stats().peak_resident_bytes, extent);
  const uint32_t again = alloc(100000);
  EXPECT_EQ(heap_.stats().peak_resident_bytes, extent) << "the cached extent came back: nothing new";
  EXPECT_TRUE(heap_.release(again));
  const uint32_t other = alloc(300000);  // another class: carved while the first extent stays cached
  const uint64_t other_extent = heap_.record(other).extent_bytes;
  EXPECT_EQ(heap_.stats().peak_resident_bytes, extent + other_extent);
  EXPECT_EQ(heap_.stats().resident_bytes(), extent + other_extent);
}

// A class's returned extents must not hide its resident ones: allocation takes resident pages first (no
// page faults), and take_resident never carves or hands out returned pages.
TEST_F(ObjectHeapTest, ResidentExtentsAreReusedBeforeReturnedOnes) {
  heap_.set_resident_limit(1ull << 30);
  const uint32_t kept = alloc(100000), dropped = alloc(100000);
  const uintptr_t kept_start = heap_.record(kept).start;
  EXPECT_TRUE(heap_.release(kept));
  EXPECT_FALSE(heap_.release(dropped, /*drop_pages=*/true));  // pushed last: head of a shared list
  bool zeroed = true;
  const uint32_t again = heap_.allocate(100000, kPageSize, 0, &zeroed);
  ASSERT_NE(again, kNoSlot);
  EXPECT_EQ(heap_.record(again).start, kept_start);
  EXPECT_FALSE(zeroed);
  EXPECT_EQ(heap_.take_resident(100000, kPageSize, 0, 0), kNoSlot) << "only a returned extent is left";
  const uint64_t carved = heap_.stats().extents_carved;
  EXPECT_EQ(heap_.take_resident(300000, kPageSize, 0, 0), kNoSlot);
  EXPECT_EQ(heap_.stats().extents_carved, carved) << "take_resident must not carve";
  const uint32_t returned = heap_.allocate(100000, kPageSize, 0, &zeroed);
  ASSERT_NE(returned, kNoSlot);
  EXPECT_TRUE(zeroed);
}

// take_resident: the request's own class first, then the smallest larger class within the limit; never a
// returned extent, another pool's, one beyond the limit, or a carve. The extent keeps its class and size.
TEST_F(ObjectHeapTest, TakeResidentFallsBackToTheSmallestLargerClassWithinTheLimit) {
  heap_.set_resident_limit(1ull << 30);
  const uint64_t k = 1024;
  const uint32_t big = alloc(180 * k), bigger = alloc(400 * k), returned = alloc(128 * k), other = alloc(128 * k, kPageSize, 1);
  const uintptr_t big_start = heap_.record(big).start, bigger_start = heap_.record(bigger).start;
  const uint64_t big_extent = heap_.record(big).extent_bytes;
  EXPECT_TRUE(heap_.release(bigger));
  EXPECT_TRUE(heap_.release(big));
  EXPECT_FALSE(heap_.release(returned, /*drop_pages=*/true));
  EXPECT_TRUE(heap_.release(other));
  const uint64_t carved = heap_.stats().extents_carved;

  EXPECT_EQ(heap_.take_resident(128 * k, kPageSize, 0, 128 * k), kNoSlot) << "its own class: only a returned extent";
  const uint32_t a = heap_.take_resident(128 * k, kPageSize, 0, 256 * k);
  ASSERT_NE(a, kNoSlot);
  EXPECT_EQ(heap_.record(a).start, big_start);  // the 180 KiB class, not the 400 KiB one
  EXPECT_EQ(heap_.record(a).extent_bytes, big_extent);
  EXPECT_EQ(heap_.record(a).size, 128 * k);
  EXPECT_EQ(heap_.record(a).state.load(), ExtentState::kLive);
  EXPECT_EQ(heap_.take_resident(128 * k, kPageSize, 0, 256 * k), kNoSlot) << "400 KiB is beyond twice the request";
  const uint32_t b = heap_.take_resident(128 * k, kPageSize, 0, 512 * k);
  ASSERT_NE(b, kNoSlot);
  EXPECT_EQ(heap_.record(b).start, bigger_start);
  EXPECT_EQ(heap_.stats().extents_carved, carved);
  // Released, each goes back to its own class: the 180 KiB request gets its extent back.
  const uint32_t generation = heap_.record(a).generation.load();
  EXPECT_TRUE(heap_.release(a));
  const uint32_t again = heap_.take_resident(180 * k, kPageSize, 0, 0);
  ASSERT_NE(again, kNoSlot);
  EXPECT_EQ(heap_.record(again).start, big_start);
  EXPECT_EQ(heap_.record(again).generation.load(), generation + 1);
}

TEST_F(ObjectHeapTest, TrimCachedReturnsOnlyThatPoolsResidentPages) {
  heap_.set_resident_limit(1ull << 30);
  const uint32_t small = alloc(100000), big = alloc(1000000), other_pool = alloc(1000000, kPageSize, 1);
  for (uint32_t s : {small, big, other_pool}) {
    std::memset(reinterpret_cast<void*>(heap_.record(s).start), 0xcd, heap_.record(s).extent_bytes);
    EXPECT_TRUE(heap_.release(s));
  }
  const uint64_t big_bytes = heap_.record(big).extent_bytes, small_bytes = heap_.record(small).extent_bytes;
  const uint64_t resident_before = heap_.stats().cached_resident_bytes;
  // One extent of the smallest class that covers the request: a page's worth drops the 100 KB one.
  EXPECT_EQ(heap_.trim_cached(0, kPageSize), small_bytes);
  EXPECT_EQ(heap_.stats().cached_resident_bytes, resident_before - small_bytes);
  EXPECT_EQ(heap_.stats().extents_trimmed, 1u);
  EXPECT_EQ(heap_.trim_cached(0, ~uint64_t{0}), big_bytes);
  EXPECT_EQ(heap_.trim_cached(0, ~uint64_t{0}), 0u) << "nothing resident left in pool 0";
  EXPECT_EQ(heap_.stats().cached_resident_bytes, heap_.record(other_pool).extent_bytes);
  // Trimmed extents stay cached and read as zeros when handed out again.
  bool zeroed = false;
  const uint32_t s = heap_.allocate(1000000, kPageSize, 0, &zeroed);
  EXPECT_EQ(s, big);
  EXPECT_TRUE(zeroed);
  const auto* bytes = reinterpret_cast<const unsigned char*>(heap_.record(s).start);
  for (uint64_t i = 0; i < big_bytes; i += kPageSize) ASSERT_EQ(bytes[i], 0) << i;
  EXPECT_EQ(heap_.stats().extents_reused, 1u);
}

// No single cached extent covers the request: the largest classes go first until it is covered.
TEST_F(ObjectHeapTest, TrimCachedTakesTheLargestFirstWhenNoneCoversTheRequest) {
  heap_.set_resident_limit(1ull << 30);
  const uint32_t a = alloc(100000), b = alloc(100000), c = alloc(200000);
  for (uint32_t s : {a, b, c}) EXPECT_TRUE(heap_.release(s));
  const uint64_t small = heap_.record(a).extent_bytes, larger = heap_.record(c).extent_bytes;
  EXPECT_EQ(heap_.trim_cached(0, larger + 1), larger + small);
  EXPECT_EQ(heap_.stats().cached_resident_bytes, small);
}

// A move claims a life with a CAS from the word (generation, no flags) (preload/migration.cc): until the
// runtime ends the birth, the word of a new life carries kBirthPending and that CAS fails, for a carved
// extent and a reused one alike.
TEST_F(ObjectHeapTest, ANewLifeCannotBeClaimedUntilItsBirthEnds) {
  for (int life = 0; life < 2; ++life) {
    const uint32_t slot = life == 0 ? alloc(64 << 10) : heap_.take_resident(64 << 10, kPageSize, 0, 64 << 10);
    ASSERT_NE(slot, kNoSlot);
    ObjectRecord& r = heap_.record(slot);
    const uint32_t generation = r.generation.load();
    uint64_t unclaimed = move_claim_word(generation, 0);
    EXPECT_FALSE(r.move_claim.compare_exchange_strong(unclaimed, move_claim_word(generation, kMoveClaimed)));
    EXPECT_EQ(r.move_claim.load(), move_claim_word(generation, kBirthPending));
    heap_.end_birth(slot);
    unclaimed = move_claim_word(generation, 0);
    EXPECT_TRUE(r.move_claim.compare_exchange_strong(unclaimed, move_claim_word(generation, kMoveClaimed)));
    r.move_claim.store(move_claim_word(generation, 0));
    heap_.release(slot);
  }
}

TEST_F(ObjectHeapTest, HonoursLargeAlignment) {
  for (uint64_t align : {uint64_t{8192}, uint64_t{65536}, uint64_t{1} << 20, kHugePageSize}) {
    const uint32_t s = alloc(70000, align);
    ASSERT_NE(s, kNoSlot);
    EXPECT_EQ(heap_.record(s).start % align, 0u) << align;
  }
  EXPECT_EQ(alloc(70000, 4ull << 20), kNoSlot);  // above 2 MiB: the caller uses the system allocator
  EXPECT_EQ(alloc(70000, 3 * 4096), kNoSlot);    // not a power of two
}

TEST_F(ObjectHeapTest, RefusesWhenFullInsteadOfFailingLater) {
  ObjectHeap small;
  ASSERT_TRUE(small.init(1ull << 30, 4));
  bool z;
  for (int i = 0; i < 4; ++i) EXPECT_NE(small.allocate(65536, kPageSize, 0, &z), kNoSlot);
  EXPECT_EQ(small.allocate(65536, kPageSize, 0, &z), kNoSlot);  // record table full
  EXPECT_EQ(small.stats().out_of_space, 1u);
  EXPECT_EQ(small.allocate(800ull << 20, kPageSize, 0, &z), kNoSlot);  // larger than half the range
  small.destroy();
}

TEST_F(ObjectHeapTest, ForeignAndInteriorPointersAreNotObjects) {
  int on_stack = 0;
  EXPECT_FALSE(heap_.contains(&on_stack));
  EXPECT_EQ(heap_.slot_of(&on_stack), kNoSlot);
  const uint32_t s = alloc(65536);
  EXPECT_EQ(heap_.slot_of(reinterpret_cast<void*>(heap_.record(s).start + 16)), kNoSlot);
}

TEST_F(ObjectHeapTest, ConcurrentAllocateAndReleaseKeepExtentsExclusive) {
  std::atomic<int> errors{0};
  auto worker = [&](int seed) {
    std::vector<uint32_t> mine;
    for (int i = 0; i < 2000; ++i) {
      const uint64_t size = 65536 + static_cast<uint64_t>((seed * 7919 + i * 104729) % 300000);
      const uint32_t s = alloc(size, kPageSize, static_cast<uint8_t>(i % 2));
      if (s == kNoSlot) {
        ++errors;
        continue;
      }
      auto* p = reinterpret_cast<unsigned char*>(heap_.record(s).start);
      p[0] = static_cast<unsigned char>(seed);
      p[size - 1] = static_cast<unsigned char>(seed);
      mine.push_back(s);
      if (mine.size() > 8) {
        const uint32_t victim = mine.front();
        auto* q = reinterpret_cast<unsigned char*>(heap_.record(victim).start);
        if (q[0] != static_cast<unsigned char>(seed)) ++errors;  // someone else wrote into our extent
        mine.erase(mine.begin());
        heap_.release(victim);
      }
    }
    for (uint32_t s : mine) heap_.release(s);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t + 1);
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  const HeapStats st = heap_.stats();
  EXPECT_GT(st.extents_reused, 0u);
  EXPECT_EQ(st.cached_bytes > 0, true);
}

}  // namespace
}  // namespace sentinel
