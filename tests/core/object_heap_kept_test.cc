// Kept pages (dry runs): trim_cached(..., keep_pages) returns a cached extent's pages in the books only.
// The extent must come back without faults and with its bytes as they were (so it is never reported zeroed),
// count as resident for the heap's limit, and be the first to lose its pages for real over that limit. An
// extent of a smaller class that would fault its pages in takes a kept extent's instead (hand_over).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/object_heap.h"
#include "os/fault_injector.h"

namespace sentinel {
namespace {

class KeptPagesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(heap_.init(4ull << 30, 1u << 16)); }
  void TearDown() override { heap_.destroy(); }
  // A live extent of `size` bytes in pool 0 whose pages all hold `fill`.
  uint32_t live_filled(uint64_t size, unsigned char fill) {
    bool zeroed = false;
    const uint32_t slot = heap_.allocate(size, kPageSize, 0, &zeroed);
    EXPECT_NE(slot, kNoSlot);
    std::memset(reinterpret_cast<void*>(heap_.record(slot).start), fill, heap_.record(slot).extent_bytes);
    return slot;
  }
  // The same, cached with its pages resident.
  uint32_t cached_filled(uint64_t size, unsigned char fill) {
    const uint32_t slot = live_filled(size, fill);
    EXPECT_TRUE(heap_.release(slot));
    return slot;
  }
  // Raises the heap's peak with a 4 MiB extent in pool 3 that is then returned, so kept pages fit under
  // the peak (kept_excess_locked).
  void ballast() {
    bool zeroed = false;
    const uint32_t slot = heap_.allocate(4ull << 20, kPageSize, 3, &zeroed);
    ASSERT_NE(slot, kNoSlot);
    EXPECT_FALSE(heap_.release(slot, /*drop_pages=*/true));
  }
  // An allocation in pool 0 made while every call of `op` to the kernel fails.
  uint32_t allocate_failing(os::Op op, uint64_t size, bool* zeroed, bool* kept) {
    os::FaultConfig fail;
    fail.rate = 1.0;
    fail.ops = os::op_bit(op);
    os::ScopedFaultInjection inject(fail);
    EXPECT_TRUE(inject.started());
    return heap_.allocate(size, kPageSize, 0, zeroed, false, nullptr, nullptr, kept);
  }
  // Pages of the extent mapped in the process (mincore).
  uint64_t pages_in_core(uint32_t slot) {
    const ObjectRecord& r = heap_.record(slot);
    unsigned char vec[1024] = {};
    const uint64_t pages = r.extent_bytes / kPageSize;
    EXPECT_LE(pages, sizeof vec);
    EXPECT_EQ(mincore(reinterpret_cast<void*>(r.start), r.extent_bytes, vec), 0);
    uint64_t n = 0;
    for (uint64_t i = 0; i < pages; ++i) n += vec[i] & 1;
    return n;
  }
  ObjectHeap heap_;
};

TEST_F(KeptPagesTest, TheBooksReturnTheExtentAndTheNextBirthOfItsClassFindsItsPages) {
  const uint32_t a = cached_filled(100000, 0xab);
  const uint64_t extent = heap_.record(a).extent_bytes;
  EXPECT_EQ(heap_.trim_cached(0, 1, /*keep_pages=*/true), heap_.record(a).charge);
  HeapStats st = heap_.stats();
  EXPECT_EQ(st.cached_resident_bytes, 0u) << "the books returned it";
  EXPECT_EQ(st.cached_kept_bytes, extent);
  EXPECT_EQ(st.resident_bytes(), extent) << "its pages still count against the limit";
  EXPECT_EQ(st.extents_trimmed, 1u);
  EXPECT_EQ(pages_in_core(a), extent / kPageSize) << "nothing was dropped";
  EXPECT_EQ(heap_.take_resident(100000, kPageSize, 0, 2 * extent), kNoSlot) << "kept is not parked";

  bool zeroed = true, kept = false;
  uint8_t from = 0;
  bool from_resident = true;
  const uint32_t b = heap_.allocate(100000, kPageSize, 0, &zeroed, false, &from, &from_resident, &kept);
  EXPECT_EQ(b, a);
  EXPECT_TRUE(kept);
  EXPECT_FALSE(zeroed) << "it holds the last object's bytes";
  EXPECT_EQ(from, kMaxPools);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(heap_.record(b).start)[4096], 0xab);
  st = heap_.stats();
  EXPECT_EQ(st.cached_kept_bytes, 0u);
  EXPECT_EQ(st.resident_bytes(), extent);
  // Its next life is an ordinary resident one.
  EXPECT_TRUE(heap_.release(b));
  EXPECT_EQ(heap_.stats().cached_resident_bytes, extent);
  EXPECT_FALSE(heap_.record(b).pages_kept);
}

TEST_F(KeptPagesTest, ZeroFirstPrefersReturnedPagesAndResidentOnesComeBeforeKeptOnes) {
  const uint32_t kept_slot = live_filled(100000, 1), returned_slot = live_filled(100000, 2),
                 resident_slot = live_filled(100000, 3);
  EXPECT_TRUE(heap_.release(kept_slot));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  EXPECT_TRUE(heap_.release(returned_slot));
  EXPECT_GT(heap_.trim_cached(0, 1, false), 0u);
  EXPECT_TRUE(heap_.release(resident_slot));

  bool zeroed = false, kept = true;
  uint32_t s = heap_.allocate(100000, kPageSize, 0, &zeroed, /*zero_first=*/true, nullptr, nullptr, &kept);
  EXPECT_EQ(s, returned_slot);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  s = heap_.allocate(100000, kPageSize, 0, &zeroed, false, nullptr, nullptr, &kept);
  EXPECT_EQ(s, resident_slot);
  EXPECT_FALSE(kept);
  s = heap_.allocate(100000, kPageSize, 0, &zeroed, false, nullptr, nullptr, &kept);
  EXPECT_EQ(s, kept_slot);
  EXPECT_TRUE(kept);
  EXPECT_FALSE(zeroed);
}

TEST_F(KeptPagesTest, AReleaseOverTheLimitDropsKeptPagesBeforeItsOwn) {
  const uint32_t a = live_filled(100000, 7), b = live_filled(300000, 8);
  const uint64_t a_extent = heap_.record(a).extent_bytes, b_extent = heap_.record(b).extent_bytes;
  EXPECT_TRUE(heap_.release(a));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  heap_.set_resident_limit(b_extent);
  EXPECT_TRUE(heap_.release(b)) << "the kept pages went, the freed extent keeps its own";
  const HeapStats st = heap_.stats();
  EXPECT_EQ(st.kept_dropped_bytes, a_extent);
  EXPECT_EQ(st.cached_kept_bytes, 0u);
  EXPECT_EQ(st.cached_resident_bytes, b_extent);
  EXPECT_EQ(pages_in_core(a), 0u);
  // Returned for real now: the next birth of its class reads zeros and is not a kept one.
  bool zeroed = false, kept = true;
  const uint32_t c = heap_.allocate(100000, kPageSize, 0, &zeroed, false, nullptr, nullptr, &kept);
  EXPECT_EQ(c, a);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(heap_.record(c).start)[0], 0);
}

// Kept pages must not cost memory that returning them would not have: while the heap holds less than it ever
// held without them they stay; a birth that would raise it above that returns them first.
TEST_F(KeptPagesTest, KeptPagesNeverHoldTheHeapAboveTheMostItHeldWithoutThem) {
  const uint32_t a = live_filled(100000, 7), b = live_filled(300000, 8);
  const uint64_t a_extent = heap_.record(a).extent_bytes, b_extent = heap_.record(b).extent_bytes;
  EXPECT_TRUE(heap_.release(a));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  EXPECT_TRUE(heap_.release(b));
  EXPECT_EQ(heap_.stats().peak_unkept_resident_bytes, a_extent + b_extent);
  EXPECT_EQ(heap_.stats().kept_dropped_bytes, 0u) << "the heap holds no more than at its peak";
  EXPECT_EQ(pages_in_core(a), a_extent / kPageSize);
  // A third class, carved, beside b's cached pages: a's kept pages go rather than raise the heap's peak.
  bool zeroed = false;
  const uint32_t c = heap_.allocate(600000, kPageSize, 0, &zeroed);
  const uint64_t c_extent = heap_.record(c).extent_bytes;
  ASSERT_GT(c_extent, a_extent);
  const HeapStats st = heap_.stats();
  EXPECT_EQ(st.kept_dropped_bytes, a_extent);
  EXPECT_EQ(st.cached_kept_bytes, 0u);
  EXPECT_EQ(st.resident_bytes(), b_extent + c_extent);
  EXPECT_EQ(st.peak_resident_bytes, b_extent + c_extent) << "a's pages never counted at the peak";
  EXPECT_EQ(pages_in_core(a), 0u);
}

TEST_F(KeptPagesTest, AnotherPoolTakesAKeptExtentAfterReturnedOnesAndBeforeResidentOnes) {
  const uint32_t kept_slot = live_filled(100000, 1), resident_slot = live_filled(100000, 2);
  EXPECT_TRUE(heap_.release(kept_slot));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  EXPECT_TRUE(heap_.release(resident_slot));
  ASSERT_TRUE(heap_.record(kept_slot).pages_kept);
  bool zeroed = true, kept = false, from_resident = true;
  uint8_t from = kMaxPools;
  const uint32_t s = heap_.allocate(100000, kPageSize, 1, &zeroed, false, &from, &from_resident, &kept);
  EXPECT_EQ(s, kept_slot);
  EXPECT_EQ(from, 0);
  EXPECT_FALSE(from_resident) << "its bytes left the budget when the books returned it";
  EXPECT_TRUE(kept);
  EXPECT_EQ(heap_.record(s).pool.load(), 1);
  EXPECT_EQ(heap_.stats().cached_resident_bytes, heap_.record(resident_slot).extent_bytes);
}

// A dry run's pools share the real node (keep_pages_across_pools): another pool's resident extent keeps its
// pages and bytes when a birth takes it, reported kept (the birth books the faults), never zeroed; it still
// says it came resident from that pool (a parked fast extent's bytes must leave the budget). calloc gets zeros.
TEST_F(KeptPagesTest, AcrossPoolsInADryRunAResidentExtentKeepsItsPages) {
  heap_.keep_pages_across_pools(true);
  const uint32_t a = cached_filled(100000, 7);
  bool zeroed = true, kept = false, from_resident = false;
  uint8_t from = kMaxPools;
  const uint32_t s = heap_.allocate(100000, kPageSize, 1, &zeroed, false, &from, &from_resident, &kept);
  ASSERT_EQ(s, a);
  EXPECT_EQ(from, 0);
  EXPECT_TRUE(from_resident);
  EXPECT_TRUE(kept);
  EXPECT_FALSE(zeroed);
  EXPECT_EQ(heap_.record(s).pool.load(), 1);
  EXPECT_EQ(pages_in_core(s), heap_.record(s).extent_bytes / kPageSize) << "no page was dropped";
  EXPECT_EQ(static_cast<unsigned char*>(reinterpret_cast<void*>(heap_.record(s).start))[99999], 7);
  EXPECT_EQ(heap_.stats().cached_resident_bytes, 0u);
  // calloc: the pages are returned for real, so the birth reads zeros.
  EXPECT_TRUE(heap_.release(s));
  const uint32_t c = heap_.allocate(100000, kPageSize, 2, &zeroed, /*zero_first=*/true, &from, &from_resident, &kept);
  ASSERT_EQ(c, a);
  EXPECT_EQ(from, 1);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  EXPECT_EQ(pages_in_core(c), 0u);
}

// And in a dry run a birth takes another pool's extent with pages before its own pool's returned one (which
// would fault for real); its own pool's pages come first. Without it, its own pool's returned extent.
TEST_F(KeptPagesTest, AcrossPoolsInADryRunPagesComeBeforeReturnedOnes) {
  const uint32_t own_returned = live_filled(100000, 1), other_resident = live_filled(100000, 2);
  EXPECT_FALSE(heap_.release(own_returned, /*drop_pages=*/true));
  bool zeroed = false;
  const uint32_t moved = heap_.allocate(100000, kPageSize, 1, &zeroed);  // pool 1's, then cached there
  ASSERT_EQ(moved, own_returned);
  EXPECT_FALSE(heap_.release(moved, /*drop_pages=*/true));
  EXPECT_TRUE(heap_.release(other_resident));
  // Pool 1 caches a returned extent of the class, pool 0 a resident one.
  bool kept = false;
  uint8_t from = kMaxPools;
  bool from_resident = false;
  heap_.keep_pages_across_pools(true);
  uint32_t s = heap_.allocate(100000, kPageSize, 1, &zeroed, false, &from, &from_resident, &kept);
  EXPECT_EQ(s, other_resident);
  EXPECT_EQ(from, 0);
  EXPECT_TRUE(kept);
  EXPECT_FALSE(zeroed);
  // Its own pool's pages before another's: pool 0 now caches nothing, pool 1 the resident one again.
  EXPECT_TRUE(heap_.release(s));
  s = heap_.allocate(100000, kPageSize, 1, &zeroed, false, &from, &from_resident, &kept);
  EXPECT_EQ(s, other_resident);
  EXPECT_EQ(from, kMaxPools);
  EXPECT_TRUE(heap_.release(s));
  // Off (a run with a real slow node): pool 0, which caches nothing now, takes pool 1's returned extent
  // before its resident one (pop_other_pool_locked), and faults it in.
  heap_.keep_pages_across_pools(false);
  s = heap_.allocate(100000, kPageSize, 0, &zeroed, false, &from, &from_resident, &kept);
  EXPECT_EQ(s, own_returned);
  EXPECT_EQ(from, 1);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
}

// A kept extent of a larger class (up to twice) gives its pages to a birth that would fault its own in: the
// birth reads the kept bytes, and the kept extent, still mapped but without pages, serves its class as a returned one.
TEST_F(KeptPagesTest, ABirthThatWouldFaultTakesTheKeptPagesOfALargerClass) {
  const uint32_t k = live_filled(150000, 0x5a);
  const uint64_t k_extent = heap_.record(k).extent_bytes;
  EXPECT_TRUE(heap_.release(k));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  bool zeroed = true, kept = false;
  const uint32_t e = heap_.allocate(100000, kPageSize, 0, &zeroed, false, nullptr, nullptr, &kept);
  ASSERT_NE(e, k);
  const uint64_t e_extent = heap_.record(e).extent_bytes;
  ASSERT_LT(e_extent, k_extent);
  ASSERT_LE(k_extent, 2 * e_extent);
  EXPECT_TRUE(kept);
  EXPECT_FALSE(zeroed);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(heap_.record(e).start)[e_extent - 1], 0x5a);
  EXPECT_EQ(pages_in_core(e), e_extent / kPageSize);
  EXPECT_EQ(pages_in_core(k), 0u) << "moved, and the rest returned";
  HeapStats st = heap_.stats();
  EXPECT_EQ(st.kept_handed_over_bytes, e_extent);
  EXPECT_EQ(st.cached_kept_bytes, 0u);
  EXPECT_EQ(st.resident_bytes(), e_extent);
  EXPECT_EQ(heap_.record(e).bound_node_plus1.load(), 0) << "bound afresh at its birth";
  // The donor's range is still mapped: its class gets it back empty, and can write it.
  const uint32_t again = heap_.allocate(150000, kPageSize, 0, &zeroed, false, nullptr, nullptr, &kept);
  EXPECT_EQ(again, k);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(heap_.record(k).start)[0], 0);
  std::memset(reinterpret_cast<void*>(heap_.record(k).start), 1, k_extent);
}

TEST_F(KeptPagesTest, NoHandOverForCallocFromMoreThanTwiceItsSizeOrFromAnotherPool) {
  ballast();
  const uint32_t k = live_filled(150000, 0x5a), big = live_filled(400000, 0x6b);
  EXPECT_TRUE(heap_.release(k));
  EXPECT_TRUE(heap_.release(big));
  EXPECT_GT(heap_.trim_cached(0, 1ull << 30, true), 0u);  // both kept
  bool zeroed = false, kept = true;
  // calloc: a fresh extent of its own (kept pages hold bytes, and zeroing them costs what faults do).
  uint32_t e = heap_.allocate(100000, kPageSize, 0, &zeroed, /*zero_first=*/true, nullptr, nullptr, &kept);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  // More than twice its size: 400,000 bytes for 60,000.
  e = heap_.allocate(60000, kPageSize, 0, &zeroed, false, nullptr, nullptr, &kept);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  // Another pool's kept pages are not its pool's.
  e = heap_.allocate(100000, kPageSize, 1, &zeroed, false, nullptr, nullptr, &kept);
  EXPECT_NE(e, kNoSlot);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  EXPECT_EQ(heap_.stats().kept_handed_over_bytes, 0u);
  EXPECT_EQ(heap_.stats().cached_kept_bytes, heap_.record(k).extent_bytes + heap_.record(big).extent_bytes);
}

TEST_F(KeptPagesTest, AMoveTheKernelRefusesLeavesTheDonorKeptAndTheBirthEmpty) {
  ballast();
  const uint32_t k = live_filled(150000, 0x5a);
  EXPECT_TRUE(heap_.release(k));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  bool zeroed = false, kept = true;
  const uint32_t e = allocate_failing(os::Op::kMremap, 100000, &zeroed, &kept);
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(kept);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(heap_.record(e).start)[0], 0);
  EXPECT_EQ(heap_.stats().cached_kept_bytes, heap_.record(k).extent_bytes);
  EXPECT_EQ(pages_in_core(k), heap_.record(k).extent_bytes / kPageSize);
  EXPECT_TRUE(heap_.record(k).pages_kept);
}

// The hand-over never leaves a hole in the heap's range, not even between two calls: another thread's mmap
// would be given the hole (the kernel takes the highest gap that fits), and the heap would hand out that
// mapping's memory as an extent too. Checked at the moment the move returns, from inside the mremap call.
struct DonorRangeProbe {
  static inline const os::Calls* next = nullptr;
  static inline int moves = 0;
  static inline int left_unmapped = 0;
  static void* mremap(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr) {
    void* r = next->mremap(old_addr, old_len, new_len, flags, new_addr);
    if (r == MAP_FAILED) return r;
    ++moves;
    unsigned char vec[256];
    // mincore fails with ENOMEM where part of the range is not mapped.
    if (old_len / kPageSize <= sizeof vec && ::mincore(old_addr, old_len, vec) != 0 && errno == ENOMEM) ++left_unmapped;
    return r;
  }
};

TEST_F(KeptPagesTest, TheDonorsRangeStaysMappedThroughTheHandOver) {
  const uint32_t k = live_filled(150000, 0x5a);
  EXPECT_TRUE(heap_.release(k));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  os::Calls probe = os::kernel();
  probe.mremap = &DonorRangeProbe::mremap;
  DonorRangeProbe::next = &os::kernel();
  DonorRangeProbe::moves = DonorRangeProbe::left_unmapped = 0;
  const os::Calls* previous = os::install(&probe);
  bool zeroed = true, kept = false;
  const uint32_t e = heap_.allocate(100000, kPageSize, 0, &zeroed, false, nullptr, nullptr, &kept);
  os::install(previous);
  ASSERT_EQ(DonorRangeProbe::moves, 1) << "the kept pages were handed over";
  EXPECT_TRUE(kept);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(heap_.record(e).start)[0], 0x5a);
  EXPECT_EQ(DonorRangeProbe::left_unmapped, 0) << "the donor's range was a hole once the pages moved";
  // The moved pages brought the donor's advice and policy; the donor keeps its own.
  EXPECT_EQ(heap_.record(e).bound_node_plus1.load(), 0);
  EXPECT_EQ(pages_in_core(k), 0u);
}

// The donor's pages past what moved hold its last object's bytes until they are returned: if the kernel
// refuses that, the donor stays a kept extent, so calloc never takes it for zeros.
TEST_F(KeptPagesTest, ADonorWhoseRestCannotBeReturnedStaysKept) {
  ballast();
  const uint32_t k = live_filled(150000, 0x5a);
  EXPECT_TRUE(heap_.release(k));
  EXPECT_GT(heap_.trim_cached(0, 1, true), 0u);
  bool zeroed = true, kept = false;
  const uint32_t e = allocate_failing(os::Op::kMadvise, 100000, &zeroed, &kept);
  EXPECT_TRUE(kept);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(heap_.record(e).start)[0], 0x5a);
  EXPECT_TRUE(heap_.record(k).pages_kept);
  const uint32_t c = heap_.allocate(150000, kPageSize, 0, &zeroed, /*zero_first=*/true, nullptr, nullptr, &kept);
  EXPECT_EQ(c, k);
  EXPECT_FALSE(zeroed) << "its tail still holds 0x5a";
  EXPECT_TRUE(kept);
}

}  // namespace
}  // namespace sentinel
