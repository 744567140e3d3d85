// The object heap: one reserved range of address space in which every object gets its own extent.
//
// Layout: extents smaller than 2 MiB are carved upward from the start of the range, page-aligned, in
// memory marked MADV_NOHUGEPAGE; larger extents are carved downward from the end, 2 MiB-aligned and
// marked MADV_HUGEPAGE so transparent huge pages can back them. No two extents share a page, so placing
// an extent's pages places exactly one object; and no large folio can hold pages of two extents (small
// ones get none; a large one starts a 2 MiB region and the next one above starts another), so a move of
// one extent never drags a neighbour along (migrate::Neighbours::kShareNoLargeFolio). Extents are never split or merged: a freed extent goes to a per-(size class, pool) cache and
// is handed out again to the next object of its class in that pool (a pool stands for a memory node, so
// recycled pages are already where the new object should live). When the resident bytes in the cache
// pass a limit, further freed extents are returned to the kernel with MADV_DONTNEED before caching.
// Each (size class, pool) keeps two lists, extents whose pages are resident and extents whose pages were
// returned: allocation takes a resident one first (no page faults), and trim_cached() can return a
// pool's resident pages without walking past returned ones.
//
// Every extent has a record in a fixed table, handed out in order as extents are carved and never given
// back: a cached extent keeps its record, and reusing the extent reuses it. A page index maps an extent's
// first page to its record.
//
// Thread safety: all methods may be called concurrently. One spin lock guards the caches, the carve
// pointers and the count of records handed out; it is never held across a system call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/size_class.h"
#include "core/spin_lock.h"

namespace sentinel {

inline constexpr uint32_t kNoSlot = 0xffffffffu;
inline constexpr uint32_t kMaxPools = 4;

enum class ExtentState : uint8_t { kUnused, kLive, kCached };

// One extent and, while it is live, the object in it. The runtime owns the object fields.
struct ObjectRecord {
  uintptr_t start = 0;
  uint64_t extent_bytes = 0;
  uint64_t size = 0;        // bytes the program asked for; 0 while cached
  uint64_t tag = 0;         // call-site hash mixed with the occurrence number within the step
  uint64_t site = 0;        // call-site hash
  int64_t birth_step = -1;  // step index at allocation, -1 before steps are known
  uint64_t birth_ns = 0;
  uint32_t occurrence = 0;
  uint32_t birth_event = 0;
  uint32_t generation = 0;  // bumped each time the extent holds a new object
  uint32_t next_cached = kNoSlot;
  uint16_t size_class = 0;
  uint8_t pool = 0;
  std::atomic<ExtentState> state{ExtentState::kUnused};
  bool resident = false;          // pages may be backed (false after MADV_DONTNEED)
  uint16_t bound_node_plus1 = 0;  // node the extent is mbind-ed to, plus one; 0 = never bound
  // Migration hand-off between free() and the migration engine (bits kMoving, kFreed; see
  // preload/migration.cc), and the pool the queued or running move goes to.
  std::atomic<uint8_t> move_flags{0};
  uint8_t move_to_pool = 0;
};

struct HeapStats {
  uint64_t extents_carved = 0;
  uint64_t extents_reused = 0;
  uint64_t extents_trimmed = 0;
  uint64_t carved_bytes = 0;
  uint64_t cached_bytes = 0;
  uint64_t cached_resident_bytes = 0;
  uint64_t out_of_space = 0;  // allocations refused because the range or the table was full
};

class ObjectHeap {
 public:
  constexpr ObjectHeap() = default;
  ObjectHeap(const ObjectHeap&) = delete;
  ObjectHeap& operator=(const ObjectHeap&) = delete;

  // Reserves `reserve_bytes` of address space (halving on failure down to 1 GiB) and the record table.
  // Returns false when nothing could be reserved. Not thread-safe; call once before any other method.
  bool init(uint64_t reserve_bytes, uint32_t max_records = 1u << 20) noexcept;
  // Unmaps everything (tests only: live pointers become invalid).
  void destroy() noexcept;

  bool contains(const void* p) const noexcept {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    return a - base_ < size_;
  }

  // Returns the slot of a new extent of at least `size` bytes whose start is aligned to `align`
  // (a power of two, at most 2 MiB), taken from `pool`'s cache when possible; kNoSlot when full.
  // The record's state is kLive and its object fields are reset; the caller fills them in. *zeroed tells
  // whether the extent is known to read as zeros (never used, or returned to the kernel since).
  // With `resident_only` it takes only a cached extent whose pages are resident and never carves.
  uint32_t allocate(uint64_t size, uint64_t align, uint8_t pool, bool* zeroed, bool resident_only = false) noexcept;

  // The slot whose extent starts exactly at p, or kNoSlot (interior or foreign pointer).
  uint32_t slot_of(const void* p) const noexcept;

  // Returns a live extent to its pool's cache. May call madvise (without holding the lock). With
  // `drop_pages` the extent's pages are returned to the kernel whatever the cache holds. Returns whether
  // the cached extent's pages are still resident (false when dropped here, by request or by the cache
  // limit, or already before).
  bool release(uint32_t slot, bool drop_pages = false) noexcept;

  // Returns to the kernel the pages of cached resident extents of `pool` until at least `bytes` are
  // dropped or none is left: one extent of the smallest class that covers `bytes` if there is one, else
  // the largest classes first. Returns the bytes whose pages were dropped. The extents stay
  // cached (as returned ones). Holds the lock only to take extents out of and back into the cache.
  uint64_t trim_cached(uint8_t pool, uint64_t bytes) noexcept;

  ObjectRecord& record(uint32_t slot) noexcept { return records_[slot]; }
  const ObjectRecord& record(uint32_t slot) const noexcept { return records_[slot]; }
  uint32_t record_count() const noexcept { return records_used_.load(std::memory_order_acquire); }

  // Resident bytes the cache may hold before freed extents are trimmed (0 = trim every free).
  void set_cache_limit(uint64_t bytes) noexcept { cache_limit_.store(bytes, std::memory_order_relaxed); }

  HeapStats stats() const noexcept;
  uintptr_t base() const noexcept { return base_; }
  uint64_t reserved_bytes() const noexcept { return size_; }

  void lock_for_fork() noexcept { lock_.lock(); }
  void unlock_after_fork_parent() noexcept { lock_.unlock(); }
  void reset_after_fork_child() noexcept { lock_.reset_after_fork(); }

 private:
  uint32_t pop_cached_locked(uint32_t cls, uint8_t pool, uint64_t align, bool resident_only) noexcept;
  void push_cached_locked(uint32_t slot) noexcept;
  uint32_t carve_locked(uint32_t cls, uint64_t align, uintptr_t* start) noexcept;

  uintptr_t base_ = 0;
  uint64_t size_ = 0;
  ObjectRecord* records_ = nullptr;
  uint32_t max_records_ = 0;
  std::atomic<uint32_t> records_used_{0};
  uint32_t* page_index_ = nullptr;  // slot + 1 at each extent's first page, 0 elsewhere
  uint64_t page_index_bytes_ = 0;
  uint64_t records_bytes_ = 0;

  mutable SpinLock lock_;
  uintptr_t low_ = 0;   // next free address for small extents (grows up)
  uintptr_t high_ = 0;  // end of free space for huge extents (grows down)
  // Slot + 1 of each cache list's first extent, 0 when empty; [.][.][1]: resident pages, [0]: returned.
  uint32_t cache_head_[kNumSizeClasses][kMaxPools][2] = {};
  HeapStats stats_;
  std::atomic<uint64_t> cache_limit_{64ull << 20};
};

}  // namespace sentinel
