#include "core/object_heap.h"

#include <sys/mman.h>

#include <cerrno>

#include "os/os.h"

namespace sentinel {
namespace {

void* map_noreserve(uint64_t bytes) noexcept {
  void* p = os::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

bool ObjectHeap::init(uint64_t reserve_bytes, uint32_t max_records) noexcept {
  // One extra huge page so the range itself can start 2 MiB-aligned.
  uint64_t want = align_up(reserve_bytes, kHugePageSize);
  void* raw = nullptr;
  while (want >= (1ull << 30)) {
    raw = map_noreserve(want + kHugePageSize);
    if (raw != nullptr) break;
    want /= 2;
  }
  if (raw == nullptr) return false;
  const uintptr_t aligned = align_up(reinterpret_cast<uintptr_t>(raw), kHugePageSize);
  // Small extents must never share a transparent huge page with a neighbour.
  os::madvise(raw, want + kHugePageSize, MADV_NOHUGEPAGE);

  records_bytes_ = align_up(uint64_t{max_records} * sizeof(ObjectRecord), kPageSize);
  page_index_bytes_ = align_up(want / kPageSize * sizeof(uint32_t), kPageSize);
  void* recs = map_noreserve(records_bytes_);
  void* index = map_noreserve(page_index_bytes_);
  if (recs == nullptr || index == nullptr) {
    if (recs != nullptr) os::munmap(recs, records_bytes_);
    if (index != nullptr) os::munmap(index, page_index_bytes_);
    os::munmap(raw, want + kHugePageSize);
    return false;
  }
  records_ = static_cast<ObjectRecord*>(recs);
  page_index_ = static_cast<uint32_t*>(index);
  max_records_ = max_records;
  base_ = aligned;
  size_ = want;
  low_ = aligned;
  high_ = aligned + want;
  return true;
}

void ObjectHeap::destroy() noexcept {
  if (base_ == 0) return;
  os::munmap(reinterpret_cast<void*>(base_), size_);
  os::munmap(records_, records_bytes_);
  os::munmap(page_index_, page_index_bytes_);
  base_ = 0;
  size_ = 0;
}

uint32_t ObjectHeap::unlink_head_locked(uint32_t cls, uint8_t pool, int list) noexcept {
  uint32_t& head = cache_head_[cls][pool][list];
  const uint32_t slot = head - 1;
  ObjectRecord& r = records_[slot];
  __atomic_store_n(&head, r.next_cached == kNoSlot ? 0 : r.next_cached + 1, __ATOMIC_RELAXED);
  stats_.cached_bytes -= r.extent_bytes;
  if (r.resident) {
    stats_.cached_resident_bytes -= r.extent_bytes;
    stats_.cached_resident_by_pool[pool] -= r.extent_bytes;
  }
  if (r.pages_kept) {
    stats_.cached_kept_bytes -= r.extent_bytes;
    kept_hint_.store(stats_.cached_kept_bytes, std::memory_order_relaxed);
  }
  r.next_cached = kNoSlot;
  return slot;
}

uint32_t ObjectHeap::pop_list_locked(uint32_t cls, uint8_t pool, int list, uint64_t align) noexcept {
  const uint32_t head = cache_head_[cls][pool][list];
  if (head == 0) return kNoSlot;
  if ((records_[head - 1].start & (align - 1)) != 0) return kNoSlot;  // rare: over-aligned; another list or carve
  ++stats_.extents_reused;
  return unlink_head_locked(cls, pool, list);
}

uint32_t ObjectHeap::pop_cached_locked(uint32_t cls, uint8_t pool, uint64_t align, bool zero_first) noexcept {
  // Kept pages fault nothing in but read as their last object left them; returned ones read as zeros.
  static constexpr int kOrder[2][3] = {{kResident, kKept, kReturned}, {kReturned, kKept, kResident}};
  for (const int list : kOrder[zero_first ? 1 : 0]) {
    const uint32_t slot = pop_list_locked(cls, pool, list, align);
    if (slot != kNoSlot) return slot;
  }
  return kNoSlot;
}

uint32_t ObjectHeap::pop_with_pages_locked(uint32_t cls, uint8_t pool, uint64_t align, bool* other_pool) noexcept {
  // Its own pool's first: another pool's resident extents may serve that pool's next births, and taking
  // them before this pool's kept ones held densenet121's heap 60-110 MB higher at its peak (dry run, 20%).
  for (const int list : {kResident, kKept}) {
    const uint32_t slot = pop_list_locked(cls, pool, list, align);
    if (slot != kNoSlot) return slot;
  }
  const uint32_t slot = pop_other_pool_locked(cls, pool, align, {kResident, kKept});
  *other_pool = slot != kNoSlot;
  return slot;
}

uint32_t ObjectHeap::pop_other_pool_locked(uint32_t cls, uint8_t pool, uint64_t align,
                                           std::initializer_list<int> lists) noexcept {
  for (const int list : lists) {
    for (uint8_t other = 0; other < kMaxPools; ++other) {
      if (other == pool) continue;
      const uint32_t slot = pop_list_locked(cls, other, list, align);
      if (slot != kNoSlot) {
        ++stats_.extents_from_other_pool;
        return slot;
      }
    }
  }
  return kNoSlot;
}

void ObjectHeap::push_cached_locked(uint32_t slot) noexcept {
  ObjectRecord& r = records_[slot];
  uint32_t& head = cache_head_[r.size_class][r.pool.load(std::memory_order_relaxed)][list_of(r)];
  r.next_cached = head == 0 ? kNoSlot : head - 1;
  __atomic_store_n(&head, slot + 1, __ATOMIC_RELAXED);  // take_resident() peeks without the lock
  stats_.cached_bytes += r.extent_bytes;
  if (r.resident) {
    stats_.cached_resident_bytes += r.extent_bytes;
    stats_.cached_resident_by_pool[r.pool.load(std::memory_order_relaxed)] += r.extent_bytes;
  }
  if (r.pages_kept) {
    stats_.cached_kept_bytes += r.extent_bytes;
    kept_hint_.store(stats_.cached_kept_bytes, std::memory_order_relaxed);
  }
}

uint32_t ObjectHeap::carve_locked(uint32_t cls, uint64_t align, uintptr_t* start) noexcept {
  const uint64_t bytes = class_pages(cls) * kPageSize;
  const uint32_t slot = records_used_.load(std::memory_order_relaxed);
  if (slot >= max_records_) return kNoSlot;
  uintptr_t at;
  if (bytes >= kHugePageSize) {
    if (high_ - low_ < bytes + kHugePageSize) return kNoSlot;
    at = (high_ - bytes) & ~(kHugePageSize - 1);
    high_ = at;
  } else {
    at = align_up(low_, align);
    if (at + bytes > high_) return kNoSlot;
    low_ = at + bytes;
  }
  *start = at;
  records_used_.store(slot + 1, std::memory_order_release);
  ++stats_.extents_carved;
  stats_.carved_bytes += bytes;
  return slot;
}

bool ObjectHeap::request_class(uint64_t size, uint64_t* align, uint8_t pool, uint32_t* cls) const noexcept {
  if (size == 0 || size > size_ / 2 || pool >= kMaxPools) return false;
  if (*align < kPageSize) *align = kPageSize;
  if (*align > kHugePageSize || (*align & (*align - 1)) != 0) return false;
  *cls = size_class_of_pages(pages_for(size));
  return *cls < kNumSizeClasses;
}

uint32_t ObjectHeap::allocate(uint64_t size, uint64_t align, uint8_t pool, bool* zeroed, bool zero_first,
                              uint8_t* taken_from, bool* taken_resident, bool* kept) noexcept {
  if (taken_from != nullptr) *taken_from = kMaxPools;
  if (kept != nullptr) *kept = false;
  uint32_t cls;
  if (!request_class(size, &align, pool, &cls)) return kNoSlot;
  uint32_t slot;
  uintptr_t start = 0;
  bool fresh = false;
  bool other_pool = false;
  uint64_t kept_excess = 0;
  uint32_t donor = kNoSlot;
  {
    SpinGuard guard(lock_);
    slot = keep_across_pools_.load(std::memory_order_relaxed) && !zero_first
               ? pop_with_pages_locked(cls, pool, align, &other_pool)
               : kNoSlot;
    if (slot == kNoSlot) slot = pop_cached_locked(cls, pool, align, zero_first);
    if (slot == kNoSlot) {
      // Returned extents first: taking one costs the other pool nothing it could reuse without faults.
      slot = pop_other_pool_locked(cls, pool, align, {kReturned, kKept, kResident});
      other_pool = slot != kNoSlot;
    }
    if (slot == kNoSlot) {
      slot = carve_locked(cls, align, &start);
      if (slot == kNoSlot) {
        ++stats_.out_of_space;
        return kNoSlot;
      }
      fresh = true;
    }
    // An extent whose pages must be faulted in takes those of a kept one (hand_over) when its pool has one
    // of a larger class, up to twice its own. Not for calloc: those pages are not zeros.
    const ObjectRecord& chosen = records_[slot];
    // (Only a dry run keeps pages: elsewhere the list scan is skipped.)
    if (stats_.cached_kept_bytes != 0 && !zero_first &&
        (fresh || (!other_pool && !chosen.resident && !chosen.pages_kept))) {
      donor = pop_donor_locked(cls, pool, 2 * class_pages(cls) * kPageSize);
    }
    if (donor == kNoSlot) kept_excess = note_allocation_locked();
  }
  if (kept_excess > 0) drop_kept(kept_excess);
  ObjectRecord& r = records_[slot];
  if (other_pool) {
    // Out of every list, so only this thread reaches it. Its pages sit on the other pool's node: return
    // them (a failed madvise leaves them resident, and the caller's rebind drops them or fails visibly).
    if (taken_from != nullptr) *taken_from = r.pool.load(std::memory_order_relaxed);
    if (taken_resident != nullptr) *taken_resident = r.resident;
    if (r.resident && keep_across_pools_.load(std::memory_order_relaxed) && !zero_first) {
      r.resident = false;  // a dry run: the books return them, the pages stay (*kept below)
      r.pages_kept = true;
    } else if (r.resident && os::madvise(reinterpret_cast<void*>(r.start), r.extent_bytes, MADV_DONTNEED) == 0) {
      r.resident = false;
    }
    r.pool.store(pool, std::memory_order_relaxed);
  }
  *zeroed = fresh || (!r.resident && !r.pages_kept);
  if (kept != nullptr) *kept = !fresh && r.pages_kept;
  r.resident = true;
  r.pages_kept = false;
  if (fresh) {
    r.start = start;
    r.extent_bytes = class_pages(cls) * kPageSize;
    r.charge = r.extent_bytes;
    r.size_class = static_cast<uint16_t>(cls);
    r.pool.store(pool, std::memory_order_relaxed);
    r.generation.store(0, std::memory_order_relaxed);
    if (r.extent_bytes >= kHugePageSize) {
      os::madvise(reinterpret_cast<void*>(start), r.extent_bytes, MADV_HUGEPAGE);
    }
    // Publish the index entry last: a concurrent slot_of() on this address cannot happen before the
    // pointer is returned to the program.
    __atomic_store_n(&page_index_[(start - base_) / kPageSize], slot + 1, __ATOMIC_RELEASE);
  }
  if (donor != kNoSlot) {
    if (hand_over(r, donor)) {
      *zeroed = false;
      if (kept != nullptr) *kept = true;
    }
    {
      SpinGuard guard(lock_);
      kept_excess = note_allocation_locked();
    }
    if (kept_excess > 0) drop_kept(kept_excess);
  }
  begin_life(slot, size);
  return slot;
}

uint64_t ObjectHeap::note_allocation_locked() noexcept {
  const uint64_t unkept = stats_.resident_bytes() - stats_.cached_kept_bytes;
  if (unkept > stats_.peak_unkept_resident_bytes) stats_.peak_unkept_resident_bytes = unkept;
  const uint64_t excess = kept_excess_locked();
  const uint64_t resident = stats_.resident_bytes() - excess;  // what it holds once they are dropped
  if (resident > stats_.peak_resident_bytes) stats_.peak_resident_bytes = resident;
  for (uint32_t p = 0; p < kMaxPools; ++p) {
    const uint64_t without = resident - stats_.cached_resident_by_pool[p];
    if (without > stats_.peak_resident_without_cache_of[p]) stats_.peak_resident_without_cache_of[p] = without;
  }
  return excess;
}

uint32_t ObjectHeap::pop_donor_locked(uint32_t cls, uint8_t pool, uint64_t max_extent_bytes) noexcept {
  const uint32_t end = classes_end(cls, max_extent_bytes);
  for (uint32_t c = cls + 1; c < end; ++c) {
    if (cache_head_[c][pool][kKept] != 0) return unlink_head_locked(c, pool, kKept);
  }
  return kNoSlot;
}

bool ObjectHeap::hand_over(ObjectRecord& to, uint32_t donor) noexcept {
  ObjectRecord& k = records_[donor];
  const uint64_t bytes = to.extent_bytes;
  void* from = reinterpret_cast<void*>(k.start);
  const int saved_errno = errno;  // the program's malloc() succeeds either way: its errno stays
  // The first `bytes` of the donor's mapping, pages and all, replace the extent's (empty) mapping, in one
  // call that leaves the donor's range mapped (MREMAP_DONTUNMAP: empty, its advice and memory policy kept).
  // Never a hole in the heap's range, not even for a moment: the kernel gives another thread's mmap the
  // highest gap that fits, which such a hole is, and mapping the range again then overwrote that mapping,
  // which was handed out as an extent as well (resnet18 under PyTorch 2, dry run: the software sampler's
  // tables, written by a tensor, then a SIGSEGV). A kernel without the flag (before 5.7) hands nothing over.
  bool moved = false;
  if (!dontunmap_unsupported_.load(std::memory_order_relaxed)) {
    moved = os::mremap(from, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
                       reinterpret_cast<void*>(to.start)) != MAP_FAILED;
    if (!moved && errno == EINVAL) dontunmap_unsupported_.store(true, std::memory_order_relaxed);
  }
  if (moved) {
    // If the rest cannot be returned it holds the last object's bytes: the extent stays a kept one (never
    // reported zeroed, its faults still booked), not a returned one that calloc would take as zeros.
    const bool rest_returned =
        k.extent_bytes == bytes ||
        os::madvise(reinterpret_cast<char*>(from) + bytes, k.extent_bytes - bytes, MADV_DONTNEED) == 0;
    k.resident = false;
    k.pages_kept = !rest_returned;
    // The moved mapping brought the donor's memory policy (and advice): the birth binds afresh. The donor's
    // range keeps its own.
    to.bound_node_plus1.store(0, std::memory_order_relaxed);
  }
  errno = saved_errno;
  SpinGuard guard(lock_);
  if (moved) stats_.kept_handed_over_bytes += bytes;
  push_cached_locked(donor);  // kept again if nothing moved, returned if its pages did
  return moved;
}

void ObjectHeap::begin_life(uint32_t slot, uint64_t size) noexcept {
  ObjectRecord& r = records_[slot];
  r.size = size;
  r.tag = 0;
  r.site = 0;
  r.occurrence = 0;
  r.slow_tail = false;
  r.next_cached = kNoSlot;
  const uint32_t generation = r.generation.load(std::memory_order_relaxed) + 1;
  r.generation.store(generation, std::memory_order_relaxed);
  // A claim of an earlier life that is still being dropped cannot match this word (its generation differs);
  // a move of this life cannot claim it before the birth ends (end_birth).
  r.move_claim.store(move_claim_word(generation, kBirthPending), std::memory_order_relaxed);
  r.state.store(ExtentState::kLive, std::memory_order_release);
}

uint32_t ObjectHeap::classes_end(uint32_t cls, uint64_t max_extent_bytes) noexcept {
  uint32_t end = cls + 1;
  while (end < kNumSizeClasses && class_pages(end) * kPageSize <= max_extent_bytes) ++end;
  return end;
}

uint32_t ObjectHeap::take_resident(uint64_t size, uint64_t align, uint8_t pool, uint64_t max_extent_bytes,
                                   uint64_t min_charge) noexcept {
  uint32_t cls;
  if (!request_class(size, &align, pool, &cls)) return kNoSlot;
  const uint32_t end = classes_end(cls, max_extent_bytes);
  // Peek without the lock first (a head is published with an atomic store, push_cached_locked): most
  // births of a step find no resident extent, and a miss should not cost a lock round trip.
  bool any = false;
  for (uint32_t c = cls; c < end && !any; ++c) any = __atomic_load_n(&cache_head_[c][pool][kResident], __ATOMIC_RELAXED) != 0;
  if (!any) return kNoSlot;
  uint32_t slot = kNoSlot;
  {
    SpinGuard guard(lock_);
    for (uint32_t c = cls; c < end && slot == kNoSlot; ++c) {
      const uint32_t head = cache_head_[c][pool][kResident];
      if (head != 0 && records_[head - 1].charge >= min_charge) slot = pop_list_locked(c, pool, kResident, align);
    }
  }
  if (slot == kNoSlot) return kNoSlot;
  begin_life(slot, size);
  return slot;
}

uint32_t ObjectHeap::slot_of(const void* p) const noexcept {
  if (!contains(p)) return kNoSlot;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if ((a & (kPageSize - 1)) != 0) return kNoSlot;
  const uint32_t v = __atomic_load_n(&page_index_[(a - base_) / kPageSize], __ATOMIC_ACQUIRE);
  if (v == 0) return kNoSlot;
  const ObjectRecord& r = records_[v - 1];
  return r.start == a ? v - 1 : kNoSlot;
}

bool ObjectHeap::release(uint32_t slot, bool drop_pages) noexcept {
  ObjectRecord& r = records_[slot];
  r.size = 0;
  r.state.store(ExtentState::kCached, std::memory_order_release);
  if (!drop_pages && kept_hint_.load(std::memory_order_relaxed) != 0) {
    // Pages the books had returned already go first: dropping them costs no reuse the books count on.
    uint64_t excess = 0;
    {
      SpinGuard guard(lock_);
      excess = kept_excess_locked();
    }
    if (excess > 0) drop_kept(excess);
  }
  if (!drop_pages) {
    // One lock round trip when nothing is trimmed (the common case): the extent goes straight to the cache.
    SpinGuard guard(lock_);
    // The extent still counts as live here, so caching it resident would not change resident_bytes().
    const bool over = stats_.resident_bytes() > resident_limit_.load(std::memory_order_relaxed);
    if (!over || !r.resident) {
      if (over) ++stats_.extents_trimmed;  // over the limit, but its pages were returned already
      push_cached_locked(slot);
      return r.resident;
    }
  }
  if (r.resident) {
    // Outside the lock: the extent is in no list, nobody else can reach it.
    // Only a successful MADV_DONTNEED makes the extent read as zeros again (calloc relies on it).
    if (os::madvise(reinterpret_cast<void*>(r.start), r.extent_bytes, MADV_DONTNEED) == 0) r.resident = false;
  }
  SpinGuard guard(lock_);
  if (!r.resident) ++stats_.extents_trimmed;
  push_cached_locked(slot);
  return r.resident;
}

uint64_t ObjectHeap::kept_excess_locked() const noexcept {
  if (stats_.cached_kept_bytes == 0) return 0;
  const uint64_t limit = resident_limit_.load(std::memory_order_relaxed);
  const uint64_t ceiling = stats_.peak_unkept_resident_bytes < limit ? stats_.peak_unkept_resident_bytes : limit;
  const uint64_t resident = stats_.resident_bytes();
  return resident > ceiling ? resident - ceiling : 0;
}

void ObjectHeap::drop_kept(uint64_t bytes) noexcept {
  uint32_t taken = kNoSlot;
  uint64_t taken_bytes = 0;
  {
    SpinGuard guard(lock_);
    for (uint32_t cls = kNumSizeClasses; cls-- > 0 && taken_bytes < bytes;) {
      for (uint8_t pool = 0; pool < kMaxPools && taken_bytes < bytes; ++pool) {
        while (cache_head_[cls][pool][kKept] != 0 && taken_bytes < bytes) {
          const uint32_t slot = unlink_head_locked(cls, pool, kKept);
          records_[slot].next_cached = taken;
          taken = slot;
          taken_bytes += records_[slot].extent_bytes;
        }
      }
    }
  }
  uint64_t dropped = 0;
  for (uint32_t slot = taken; slot != kNoSlot; slot = records_[slot].next_cached) {
    ObjectRecord& r = records_[slot];
    if (os::madvise(reinterpret_cast<void*>(r.start), r.extent_bytes, MADV_DONTNEED) == 0) {
      r.pages_kept = false;
      dropped += r.extent_bytes;
    }
  }
  SpinGuard guard(lock_);
  stats_.kept_dropped_bytes += dropped;
  while (taken != kNoSlot) {
    const uint32_t slot = taken;
    taken = records_[slot].next_cached;
    push_cached_locked(slot);
  }
}

uint64_t ObjectHeap::trim_cached(uint8_t pool, uint64_t bytes, bool keep_pages) noexcept {
  if (pool >= kMaxPools || bytes == 0) return 0;
  // Take resident extents out of the cache (chained through next_cached), so no allocation can hand one
  // out while its pages are being dropped.
  uint32_t taken = kNoSlot;
  uint64_t taken_bytes = 0;
  {
    SpinGuard guard(lock_);
    auto take_head = [&](uint32_t cls) {
      const uint32_t slot = unlink_head_locked(cls, pool, kResident);
      records_[slot].next_cached = taken;
      taken = slot;
      taken_bytes += records_[slot].charge;
    };
    // Every page dropped faults in again when its class is next used: one extent of the smallest class
    // that covers the request drops the fewest; failing that, the largest classes first.
    const uint32_t fits = bytes > class_pages(kNumSizeClasses - 1) * kPageSize ? kNumSizeClasses
                                                                               : size_class_of_pages(pages_for(bytes));
    for (uint32_t cls = fits; cls < kNumSizeClasses; ++cls) {
      if (cache_head_[cls][pool][kResident] != 0) {
        take_head(cls);
        break;
      }
    }
    for (uint32_t cls = kNumSizeClasses; cls-- > 0 && taken_bytes < bytes;) {
      while (cache_head_[cls][pool][kResident] != 0 && taken_bytes < bytes) take_head(cls);
    }
  }
  uint64_t dropped = 0;
  for (uint32_t slot = taken; slot != kNoSlot; slot = records_[slot].next_cached) {
    ObjectRecord& r = records_[slot];
    if (keep_pages || os::madvise(reinterpret_cast<void*>(r.start), r.extent_bytes, MADV_DONTNEED) == 0) {
      r.resident = false;
      r.pages_kept = keep_pages;
      dropped += r.charge;
    }
  }
  SpinGuard guard(lock_);
  while (taken != kNoSlot) {
    const uint32_t slot = taken;
    taken = records_[slot].next_cached;
    if (!records_[slot].resident) ++stats_.extents_trimmed;
    push_cached_locked(slot);
  }
  return dropped;
}

HeapStats ObjectHeap::stats() const noexcept {
  SpinGuard guard(lock_);
  return stats_;
}

}  // namespace sentinel
