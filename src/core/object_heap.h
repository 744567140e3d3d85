// The object heap: one reserved range of address space in which every object gets its own extent.
//
// Layout: extents smaller than 2 MiB are carved upward from the start of the range, page-aligned, in
// memory marked MADV_NOHUGEPAGE; larger extents are carved downward from the end, 2 MiB-aligned and
// marked MADV_HUGEPAGE so transparent huge pages can back them. No two extents share a page, so placing
// an extent's pages places exactly one object; and no large folio can hold pages of two extents (small
// ones get none; a large one starts a 2 MiB region and the next one above starts another), so a move of
// one extent never drags a neighbour along (migrate::Neighbours::kShareNoLargeFolio). Extents are never split or merged: a freed extent goes to a per-(size class, pool) cache and
// is handed out again to the next object of its class in that pool (a pool stands for a memory node, so
// recycled pages are already where the new object should live). Only when its own pool has no extent of
// the class does an allocation take one cached by another pool, with that extent's pages returned first,
// before it carves a new one: moves change an extent's pool, so without this one pool's cache fills with
// extents that only the other pool's births could use while the other carves (resident bytes and records
// grew every managed step). While the heap's resident bytes (its live extents and the cached extents whose
// pages are kept) are above a limit, freed extents are returned to the kernel with MADV_DONTNEED before
// caching. The limit is on the whole heap, not on the cache alone: a free never adds resident bytes, so
// keeping a freed extent costs memory only when the live set grows again without reusing it, and a step
// whose live set falls far below its peak does not drop (and fault in again) what it will reuse.
// A birth may also take a resident cached extent of a larger class through take_resident() (the runtime
// does, up to twice its class, before it carves: preload/runtime.cc, place_extent); the extent keeps its
// class, and the object's share of it is its record's charge.
// Each (size class, pool) keeps three lists: extents whose pages are resident, extents whose pages were
// returned, and (dry runs only) extents the books count as returned whose pages were kept: allocation takes
// a resident one first (no page faults), then a kept one (no page faults either), and trim_cached() can return
// a pool's resident pages without walking past returned ones. Kept pages count as resident for the limit
// below, never hold the heap above the most it held without them (they are returned for real first). An
// allocation that would fault its pages in (a fresh or returned extent) takes those of a kept extent of a
// larger class of its pool, up to twice its own, instead: mremap moves them into its range, and the kept
// extent, left mapped and empty, becomes a returned one (hand_over). So a kept page serves any class, not
// only its own, as the kernel's free pages would on a tiered machine.
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
#include <initializer_list>

#include "core/size_class.h"
#include "core/spin_lock.h"

namespace sentinel {

inline constexpr uint32_t kNoSlot = 0xffffffffu;
inline constexpr uint32_t kMaxPools = 4;

enum class ExtentState : uint8_t { kUnused, kLive, kCached };

// The claim word of a move (ObjectRecord::move_claim): the life (generation) it belongs to and its flags.
// A claim made for one life can never be taken for another's: every change of the word is a CAS that
// checks the generation (preload/migration.cc).
inline constexpr uint8_t kMoveClaimed = 1;  // a move of this life is queued or running
inline constexpr uint8_t kMoveFreed = 2;    // free() found it claimed: whoever ends the claim recycles the extent
// The life is being born: its charge, pool and node are not final until the runtime ends the birth
// (ObjectHeap::end_birth), and no move may claim it before. A pointer of an earlier life that a thread
// still holds finds the extent's new generation before the new object is returned; a move claimed then
// counted the earlier life's charge against the budget and the later one's when it ended (64-128 KiB left
// counted slow in 2 of 15 runs of FreeVersusMove.TheBudgetsBooksBalanceAfterFreesRaceMoves).
inline constexpr uint8_t kBirthPending = 4;
inline constexpr uint64_t move_claim_word(uint32_t generation, uint8_t flags) {
  return uint64_t{generation} << 8 | flags;
}

// One extent and, while it is live, the object in it. Each field has one writer at a time:
//   start, extent_bytes, size_class  the heap, when the extent is carved, before its slot is published in
//                                    the page index; constant after.
//   next_cached, resident            the heap: under its lock, or while the extent is in no cache list
//                                    (from allocate() to release() only the object's holder reaches it).
//   state, generation, move_claim    allocate() (generation + 1, claim word of the new life with
//                                    kBirthPending, then kLive with release); the allocating thread
//                                    (end_birth, once the life's fields are final); free() (kLive ->
//                                    kCached, one CAS); the migration claim protocol (move_claim, CAS
//                                    only). Atomics: read with acquire by anyone.
//   charge                           the thread that allocates the object, before the pointer is returned;
//                                    read by whoever hands the extent back (free, a move's end) and, while
//                                    the extent is cached, by the heap under its lock.
//   size, site, occurrence, tag      the thread that allocates the object, before the pointer is returned;
//                                    then the threads that hold the pointer (realloc in place writes size;
//                                    free and malloc_usable_size read). Nobody else reads them: the service
//                                    thread gets them in the object's events.
//   pool, bound_node_plus1           the heap when carved (pool), the allocating thread when it binds the
//                                    extent (bound node), then the migration engine's thread when a move of
//                                    the object ends, while the move's claim holds the extent. Atomics,
//                                    read relaxed: exact for a thread that has seen the move end (free()
//                                    through move_claim, the engine itself), a snapshot for anyone else.
//   move_to_pool, move_reserved      the thread that claimed the move, before it queues it (and
//                                    move_reserved the engine's thread when the move starts: a prefetch
//                                    takes its fast memory then); read by the engine's thread and by free()
//                                    after a cancel (the queue's lock orders them).
struct ObjectRecord {
  uintptr_t start = 0;
  uint64_t extent_bytes = 0;
  uint64_t size = 0;        // bytes the program asked for; 0 while cached
  // Bytes the fast budget counts for the extent (the runtime's books, preload/runtime.cc): its extent bytes
  // (set when it is carved), or fewer when an object of a smaller class took it (a parked extent of up to
  // twice its class) and the pages past its own class were dropped (under a budget that turned a planned
  // fast birth away; before that such an object keeps the extent's charge); the object may use only those
  // (malloc_usable_size). Kept while the extent is cached: what its parked pages count. allocate() and
  // take_resident() leave it as the extent's last life set it; the runtime sets the new life's.
  uint64_t charge = 0;
  uint64_t tag = 0;         // call-site hash mixed with the occurrence number within the step
  uint64_t site = 0;        // call-site hash
  uint32_t occurrence = 0;
  std::atomic<uint32_t> generation{0};  // bumped each time the extent holds a new object
  uint32_t next_cached = kNoSlot;
  uint16_t size_class = 0;
  std::atomic<uint8_t> pool{0};
  std::atomic<ExtentState> state{ExtentState::kUnused};
  bool resident = false;          // pages may be backed (false after MADV_DONTNEED)
  // Dry runs (trim_cached with keep_pages): the books returned the extent's pages (resident is false, a
  // tiered machine would fault them in again) but they are still mapped, with their old contents, since the
  // fast node's capacity exists only in the books. Cleared when the extent is handed out or really dropped.
  bool pages_kept = false;
  // A slow object in the extent of a larger class: its pages past the charge may be resident (the runtime
  // keeps them at the birth and drops them before a move to the fast node). false at each birth.
  bool slow_tail = false;
  // Dry runs: bytes past the charge that the books dropped (a smaller object took the parked extent) but whose
  // pages stay mapped; the runtime books their faults when a later life covers them (preload/runtime.cc,
  // drop_parked_tail and place_extent). Set and cleared by the thread that owns the extent's life.
  uint64_t kept_tail_bytes = 0;
  std::atomic<uint16_t> bound_node_plus1{0};  // node the extent is mbind-ed to, plus one; 0 = never bound
  uint8_t move_to_pool = 0;
  uint8_t move_reserved = 0;  // the move's bytes are counted in move_to_pool (placer begin_move)
  std::atomic<uint64_t> move_claim{0};  // move_claim_word(generation, flags)
};

struct HeapStats {
  uint64_t extents_carved = 0;
  uint64_t extents_reused = 0;
  uint64_t extents_from_other_pool = 0;  // reused extents that another pool had cached (their pages returned)
  uint64_t extents_trimmed = 0;
  uint64_t carved_bytes = 0;
  uint64_t cached_bytes = 0;
  uint64_t cached_resident_bytes = 0;
  uint64_t cached_resident_by_pool[kMaxPools] = {};
  // By pool p: the most resident bytes the heap held leaving out p's cached resident extents. Managed mode's
  // slow pool caches apart from the fast one; its cache would be on the slow node of a tiered machine.
  uint64_t peak_resident_without_cache_of[kMaxPools] = {};
  uint64_t cached_kept_bytes = 0;  // cached extents whose pages the books returned and a dry run kept
  uint64_t kept_dropped_bytes = 0;  // kept pages returned for real (kept_excess_locked)
  // The most the heap held resident without its kept pages, taken after each allocation: what it would hold
  // had every page the books returned been returned for real. Kept pages never raise the heap above it.
  uint64_t peak_unkept_resident_bytes = 0;
  // Kept pages handed to an extent of a smaller class that would have faulted its own in (hand_over).
  uint64_t kept_handed_over_bytes = 0;
  // Live extents count as resident (their pages are the object's); cached ones as `resident` and
  // `pages_kept` say.
  uint64_t resident_bytes() const noexcept {
    return carved_bytes - cached_bytes + cached_resident_bytes + cached_kept_bytes;
  }
  // The most resident_bytes() has been, taken after each allocation: the heap's share of the process's
  // peak RSS; above peak_object_bytes, what the caches held at that moment.
  uint64_t peak_resident_bytes = 0;
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
  // The record's state is kLive, its birth pending (end_birth) and its object fields reset; the caller
  // fills them in. *zeroed tells
  // whether the extent is known to read as zeros (never used, or returned to the kernel since).
  // With `zero_first` (calloc) it takes a cached extent whose pages were returned (reads as zeros) before a
  // resident one. When `pool` has no extent of the class but another pool does, that extent is taken (a
  // returned one before a resident one), its pages returned to the kernel (kept instead where
  // keep_pages_across_pools is on and the request is not zero_first: *kept tells), and it joins `pool`;
  // *taken_from (when given) is then set to the pool it came from and *taken_resident to whether its
  // pages were resident (a parked fast extent's bytes must leave the budget); otherwise *taken_from is
  // kMaxPools. The caller binds the extent to its new pool's node before first touch. *kept (when given)
  // tells whether the extent's pages were kept though the books had returned them (trim_cached with
  // keep_pages), its own or a larger kept extent's (hand_over): the caller books the faults a tiered
  // machine would take (*zeroed is false: they hold an earlier object's bytes).
  uint32_t allocate(uint64_t size, uint64_t align, uint8_t pool, bool* zeroed, bool zero_first = false,
                    uint8_t* taken_from = nullptr, bool* taken_resident = nullptr, bool* kept = nullptr) noexcept;

  // A cached extent of `pool` with resident pages for `size` bytes: of the request's class, or failing
  // that of the smallest larger class whose extents are at most `max_extent_bytes` (reusing resident
  // pages is cheaper than faulting the request's own class in), whose charge is at least `min_charge`.
  // Never carves; the extent keeps its class and its charge. kNoSlot when there is none; a miss looks at
  // the lists' heads without taking the lock.
  uint32_t take_resident(uint64_t size, uint64_t align, uint8_t pool, uint64_t max_extent_bytes,
                         uint64_t min_charge = 0) noexcept;

  // Ends the birth of the life in `slot` (kBirthPending): from here a move may claim it. The caller has
  // set the fields a move reads (charge, pool, bound node); the release store publishes them to it.
  void end_birth(uint32_t slot) noexcept {
    ObjectRecord& r = records_[slot];
    r.move_claim.store(move_claim_word(r.generation.load(std::memory_order_relaxed), 0), std::memory_order_release);
  }

  // The slot whose extent starts exactly at p, or kNoSlot (interior or foreign pointer).
  uint32_t slot_of(const void* p) const noexcept;

  // Returns a live extent to its pool's cache. May call madvise (without holding the lock). With
  // `drop_pages` the extent's pages are returned to the kernel whatever the cache holds. Over the limit,
  // kept pages (dry runs) are returned first, then the extent's own. Returns whether
  // the cached extent's pages are still resident (false when dropped here, by request or by the cache
  // limit, or already before).
  bool release(uint32_t slot, bool drop_pages = false) noexcept;

  // Returns to the kernel the pages of cached resident extents of `pool` until at least `bytes` are
  // dropped or none is left: one extent of the smallest class that covers `bytes` if there is one, else
  // the largest classes first. Returns the charges (ObjectRecord::charge) of the extents whose pages
  // were dropped. The extents stay cached (as returned ones). Holds the lock only to take extents out of
  // and back into the cache. With `keep_pages` (a dry run, where the fast node's capacity is a book) the
  // extents are returned in the books only: they join the kept lists, their pages stay mapped, and the next
  // object of their class reuses them without faults (a tiered machine would fault them in: the caller books
  // that).
  uint64_t trim_cached(uint8_t pool, uint64_t bytes, bool keep_pages = false) noexcept;

  ObjectRecord& record(uint32_t slot) noexcept { return records_[slot]; }
  const ObjectRecord& record(uint32_t slot) const noexcept { return records_[slot]; }
  uint32_t record_count() const noexcept { return records_used_.load(std::memory_order_acquire); }

  // Resident bytes the heap may hold (live extents and cached resident ones, see the header) before freed
  // extents are trimmed (0 = trim every free).
  void set_resident_limit(uint64_t bytes) noexcept { resident_limit_.store(bytes, std::memory_order_relaxed); }

  // A dry run's pools share the real node (os/dry_run.h): an extent another pool had cached keeps its
  // resident pages when a birth takes it, as kept pages (allocate's *kept), where a tiered machine returns
  // them and faults them in on the new pool's node; and allocate takes an extent with pages (its pool's
  // resident, then kept, then another pool's) before one without, whose pages would fault in for real.
  // Set once, before any allocation.
  void keep_pages_across_pools(bool on) noexcept { keep_across_pools_.store(on, std::memory_order_relaxed); }

  HeapStats stats() const noexcept;
  uintptr_t base() const noexcept { return base_; }
  uint64_t reserved_bytes() const noexcept { return size_; }

  void lock_for_fork() noexcept { lock_.lock(); }
  void unlock_after_fork_parent() noexcept { lock_.unlock(); }
  void reset_after_fork_child() noexcept { lock_.reset_after_fork(); }

 private:
  // The size class of a valid request (size within the range, pool known, align a power of two up to
  // 2 MiB, raised to a page); false for an invalid one.
  bool request_class(uint64_t size, uint64_t* align, uint8_t pool, uint32_t* cls) const noexcept;
  uint32_t pop_cached_locked(uint32_t cls, uint8_t pool, uint64_t align, bool zero_first) noexcept;
  // Takes the first extent of a non-empty list out of it (the cache's byte counts follow; next_cached reset).
  uint32_t unlink_head_locked(uint32_t cls, uint8_t pool, int list) noexcept;
  uint32_t pop_list_locked(uint32_t cls, uint8_t pool, int list, uint64_t align) noexcept;
  // Another pool's extent of the class, from the first of `lists` that has one in any pool; kNoSlot if none.
  uint32_t pop_other_pool_locked(uint32_t cls, uint8_t pool, uint64_t align, std::initializer_list<int> lists) noexcept;
  // With keep_across_pools_ (a dry run): an extent with pages, `pool`'s resident then kept ones, then another
  // pool's (*other_pool set); kNoSlot when no pool has one of the class.
  uint32_t pop_with_pages_locked(uint32_t cls, uint8_t pool, uint64_t align, bool* other_pool) noexcept;
  // One past the last class from `cls` up whose extents are at most `max_extent_bytes` (`cls` counts).
  static uint32_t classes_end(uint32_t cls, uint64_t max_extent_bytes) noexcept;
  // A new life for the extent in `slot`: its size set, its generation bumped, live, its birth pending.
  void begin_life(uint32_t slot, uint64_t size) noexcept;
  void push_cached_locked(uint32_t slot) noexcept;
  uint32_t carve_locked(uint32_t cls, uint64_t align, uintptr_t* start) noexcept;
  // The peaks after an allocation (peak_unkept_resident_bytes, peak_resident_bytes); returns kept_excess_locked().
  uint64_t note_allocation_locked() noexcept;
  // A kept extent of `pool` of a class above `cls`, at most `max_extent_bytes`, out of its list; kNoSlot if none.
  uint32_t pop_donor_locked(uint32_t cls, uint8_t pool, uint64_t max_extent_bytes) noexcept;
  // Moves the donor's first to.extent_bytes of pages (a kept extent out of every list) into `to`, an extent
  // without pages that nobody else reaches, with mremap (MREMAP_DONTUNMAP): the birth gets pages without
  // faults, and the donor becomes a returned extent. False (the donor kept again) when the kernel refuses.
  bool hand_over(ObjectRecord& to, uint32_t donor) noexcept;
  // Kept pages (dry runs) the heap must return for real: those that hold it above the limit, or above the
  // most it held without them (peak_unkept_resident_bytes): keeping them saves faults the books count, and
  // must not cost the process memory that returning them for real would not have cost.
  uint64_t kept_excess_locked() const noexcept;
  // Returns kept pages to the kernel, largest classes first, until `bytes` are dropped or none is left; the
  // extents join the returned lists. Takes the lock only around the lists.
  void drop_kept(uint64_t bytes) noexcept;

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
  // Slot + 1 of each cache list's first extent, 0 when empty; the lists as list_of() names them.
  static constexpr int kReturned = 0, kResident = 1, kKept = 2;
  static int list_of(const ObjectRecord& r) noexcept { return r.resident ? kResident : r.pages_kept ? kKept : kReturned; }
  uint32_t cache_head_[kNumSizeClasses][kMaxPools][3] = {};
  HeapStats stats_;
  std::atomic<uint64_t> resident_limit_{64ull << 20};
  std::atomic<bool> keep_across_pools_{false};
  // The kernel refused MREMAP_DONTUNMAP (before Linux 5.7): kept pages are not handed over (hand_over).
  std::atomic<bool> dontunmap_unsupported_{false};
  // stats_.cached_kept_bytes, readable without the lock: release() takes no extra lock where nothing is kept
  // (every run but a dry run).
  std::atomic<uint64_t> kept_hint_{0};
};

}  // namespace sentinel
