// calloc, realloc and malloc_usable_size: the entry points that care about an object's bytes.
//
// realloc of an object:
//   - in place while the new size fits its extent and fills more than half of it (the size changes, and a
//     resize event tells the service thread's mirror);
//   - growing past its extent: a new extent with 50% headroom (so a buffer grown step by step moves
//     O(log n) times), the object's call-site kept (no stack walk), and its pages moved there with mremap
//     instead of copied, when nothing else holds them (no move in flight, the same node, not a dry run);
//   - shrinking below the threshold or to less than half its extent: copied out (the system allocator,
//     or a smaller extent).
// calloc of an object: an extent that reads as zeros if the cache has one; else the recycled extent's whole
// pages returned to the kernel (large) or written with zeros (small).
// realloc of a block of the system allocator stays with the system allocator, whatever size it grows to:
// a block's owner is decided at its birth (a block that glibc grows in place costs a few nanoseconds per
// call; making it an object when it crosses the threshold cost a stack walk and a copy per block).
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "migration.h"
#include "object_path.h"
#include "os/os.h"
#include "real_malloc.h"
#include "runtime.h"

namespace sentinel::rt {
namespace {

// Below this, copying is cheaper than a system call that remaps the pages (bench/preload: realloc_grow_*).
constexpr uint64_t kRemapMinBytes = 256ull << 10;
// The kernel refused MREMAP_DONTUNMAP (before Linux 5.7): objects are copied from then on.
std::atomic<bool> g_remap_unsupported{false};
std::atomic<uint64_t> g_remapped{0};
// calloc of a recycled extent at least this large returns its whole pages to the kernel (MADV_DONTNEED:
// they read as zeros and are zeroed by the first touch, as glibc's fresh mmap of a large calloc is) instead
// of writing zeros over them: bench/preload calloc_large. Below it the system call costs more than memset.
constexpr uint64_t kCallocDropMinBytes = 128ull << 10;

// Zeros the first `bytes` of a new object whose extent is recycled (its pages may hold old data).
void clear_object(void* p, uint64_t bytes) noexcept {
  const uint64_t whole = bytes / kPageSize * kPageSize;  // p is page-aligned (an extent's start)
  if (bytes >= kCallocDropMinBytes && os::madvise(p, whole, MADV_DONTNEED) == 0) {
    std::memset(static_cast<char*>(p) + whole, 0, bytes - whole);
    return;
  }
  std::memset(p, 0, bytes);
}

// Moves the pages holding the first `bytes` of the extent of `from` to the start of the extent of `to`
// (mremap with MREMAP_DONTUNMAP: the old range stays mapped and reads as zeros). Only for an object whose
// extent nobody else touches (retired, no move in flight) and that stays on its node. False: copy instead.
bool remap_pages(ObjectRecord& from, ObjectRecord& to, uint64_t bytes) noexcept {
  State& s = g_state;
  if (bytes < kRemapMinBytes || g_remap_unsupported.load(std::memory_order_relaxed) || s.config.dry_run) return false;
  // The moved pages keep their node and their range's memory policy: only between extents bound alike.
  if (s.placer.enabled() && (from.pool.load(std::memory_order_relaxed) != to.pool.load(std::memory_order_relaxed) ||
                             from.bound_node_plus1.load(std::memory_order_relaxed) !=
                                 to.bound_node_plus1.load(std::memory_order_relaxed))) {
    return false;
  }
  const uint64_t len = pages_for(bytes) * kPageSize;
  void* moved = os::mremap(reinterpret_cast<void*>(from.start), len, len,
                           MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, reinterpret_cast<void*>(to.start));
  if (moved == MAP_FAILED) {
    // EINVAL: no MREMAP_DONTUNMAP here. (EFAULT: the range spans two mappings, as after a bind of part of
    // it; ENOMEM: too many mappings. Those may pass next time.)
    if (errno == EINVAL) g_remap_unsupported.store(true, std::memory_order_relaxed);
    return false;
  }
  // The moved range keeps the advice of the one it came from: a huge extent wants huge pages.
  if (to.extent_bytes >= kHugePageSize && from.extent_bytes < kHugePageSize) {
    os::madvise(reinterpret_cast<void*>(to.start), len, MADV_HUGEPAGE);
  }
  if (len == from.extent_bytes) from.resident = false;  // all of it reads as zeros now (calloc may use it)
  g_remapped.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// realloc of the object in `slot` to `size` bytes that no longer fit its extent: a new object with room
// for `reserve`, the old one's call-site and its contents. nullptr when the heap is full (the old object
// is untouched).
void* move_object(uint32_t slot, size_t size, size_t reserve) noexcept {
  State& s = g_state;
  ObjectRecord& from = s.heap.record(slot);
  const uint64_t keep = from.size < size ? from.size : size;
  void* q = alloc_object(ObjectRequest{size, kPageSize, reserve, from.site});
  if (q == nullptr) return nullptr;
  ObjectRecord& to = s.heap.record(s.heap.slot_of(q));
  if (!retire_object(slot)) return q;  // freed by another thread meanwhile (a double free): nothing to keep
  // Retired: no new move can claim it now, and one claimed before is visible in the claim word. Pages in
  // flight are not remapped; they are copied (readable all the while), before the move may recycle it.
  const bool claimed = (from.move_claim.load(std::memory_order_seq_cst) & kMoveClaimed) != 0;
  if (claimed || !remap_pages(from, to, keep)) std::memcpy(q, reinterpret_cast<void*>(from.start), keep);
  hand_back_extent(slot);
  return q;
}

// An object's new size within its extent: counted, and told to the service thread's mirror.
void resize_in_place(uint32_t slot, ObjectRecord& r, size_t size) noexcept {
  State& s = g_state;
  const uint64_t old_size = r.size;
  r.size = size;
  expose_object(r);
  s.counters.inplace_reallocs.fetch_add(1, std::memory_order_relaxed);
  uint64_t live;
  if (size > old_size) {
    live = s.counters.live_bytes.fetch_add(size - old_size, std::memory_order_relaxed) + (size - old_size);
    update_peak(live);
  } else {
    live = s.counters.live_bytes.fetch_sub(old_size - size, std::memory_order_relaxed) - (old_size - size);
  }
  push_object_event(ObjectEventKind::kResize, slot, r, size, live);
}

}  // namespace

void* calloc(size_t n, size_t size) noexcept {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (is_object_request(total)) {
    bool zeroed = false;
    // An extent that reads as zeros (never used, or its pages returned) if the cache has one: not written.
    if (void* p = alloc_object(ObjectRequest{total, kPageSize, 0, 0, /*zero_first=*/true}, &zeroed)) {
      if (!zeroed) clear_object(p, total);
      return p;
    }
  }
  return system_calloc(n, size);
}

void* realloc(void* p, size_t size) noexcept {
  if (p == nullptr) return malloc(size);
  if (size == 0) {  // glibc: realloc(p, 0) frees p and returns NULL
    free(p);
    return nullptr;
  }
  State& s = g_state;
  if (!s.heap.contains(p)) return system_realloc(p, size);
  const uint32_t slot = s.heap.slot_of(p);
  if (slot == kNoSlot || s.heap.record(slot).state.load(std::memory_order_acquire) != ExtentState::kLive) {
    s.counters.invalid_frees.fetch_add(1, std::memory_order_relaxed);
    errno = EINVAL;
    return nullptr;
  }
  ObjectRecord& r = s.heap.record(slot);
  const uint64_t old_size = r.size;
  // Stay in place while the object's share of its extent (its charge: runtime.cc, place_extent) fits and would
  // not be more than half empty.
  if (size >= s.threshold.load(std::memory_order_relaxed) && size <= r.charge && size * 2 > r.charge) {
    resize_in_place(slot, r, size);
    return p;
  }
  if (size > r.charge && is_object_request(size)) {
    // A growing object gets 50% headroom, so a buffer grown step by step moves O(log n) times.
    if (void* q = move_object(slot, size, size + size / 2)) return q;
  }
  void* q = is_object_request(size) ? alloc_object(ObjectRequest{size, kPageSize}) : nullptr;
  if (q == nullptr) q = system_malloc(size);
  if (q == nullptr) {
    errno = ENOMEM;
    return nullptr;  // p is untouched
  }
  std::memcpy(q, p, old_size < size ? old_size : size);
  free_object(p);
  return q;
}

void* reallocarray(void* p, size_t n, size_t size) noexcept {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

size_t malloc_usable_size(void* p) noexcept {
  if (g_state.heap.contains(p)) {
    const uint32_t slot = g_state.heap.slot_of(p);
    if (slot == kNoSlot) return 0;
    const ObjectRecord& r = g_state.heap.record(slot);
    if (r.state.load(std::memory_order_acquire) != ExtentState::kLive) return 0;
#if defined(__SANITIZE_ADDRESS__)
    return r.size;  // as ASan's own allocator says: the bytes past the size are poisoned (expose_object)
#else
    return r.charge;  // the pages the budget counts for it (runtime.cc, place_extent)
#endif
  }
  return system_malloc_usable_size(p);
}

uint64_t realloc_remapped() noexcept { return g_remapped.load(std::memory_order_relaxed); }

}  // namespace sentinel::rt
