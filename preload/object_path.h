// The object paths shared by the allocation functions of runtime.cc and realloc.cc: internal to the preload.
//
// Thread safety: every function may be called from any program thread, concurrently; none allocates, none
// holds a lock across a call out of Sentinel (runtime.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/object_heap.h"
#include "real_malloc.h"
#include "runtime_state.h"

namespace sentinel::rt {

// The thread's own state on the allocation path, in one block (one address computation per call).
struct ThreadState {
  int inside = 0;  // > 0 while the thread is inside Sentinel (ReentrancyGuard), 1 for Sentinel's threads
  // Requests below the object threshold this thread made (outside Sentinel) since its last object: how
  // much work separates two objects. The step detector tells the boundary of a step (a forward pass, an
  // optimizer step, the loop's own code, all below the threshold) from the iterations of a loop inside the
  // step by it (StepDetector::observe). Saturates.
  uint32_t small_requests = 0;
};
extern thread_local ThreadState t_thread __attribute__((tls_model("initial-exec")));

// Marks this thread as inside Sentinel, so allocations made by what Sentinel calls (libunwind,
// dladdr, the logger) go straight to the system allocator instead of recursing.
class ReentrancyGuard {
 public:
  ReentrancyGuard() noexcept { ++t_thread.inside; }
  ~ReentrancyGuard() { --t_thread.inside; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;
  static bool inside() noexcept { return t_thread.inside != 0; }
};

inline bool is_object_request(size_t size) noexcept {
  ThreadState& t = t_thread;
  if (t.inside != 0) return false;
  if (size >= g_state.threshold.load(std::memory_order_relaxed)) return true;
  if (t.small_requests != UINT32_MAX) ++t.small_requests;
  return false;
}

// In an AddressSanitizer build (scripts/sanitizers.sh) an object's own bytes are addressable and the rest
// of its extent is poisoned, and a freed extent is poisoned whole (nothing in Sentinel reads or writes an
// extent's bytes after free). No-ops in other builds.
void expose_object(const ObjectRecord& r) noexcept;
void poison_extent(const ObjectRecord& r) noexcept;
// Raises the peak of live object bytes (and with it the heap's cache limit) to `live`.
void update_peak(uint64_t live) noexcept;
// Records a free or resize of the object in `slot` (its record `r`, `size` bytes, `live_bytes` live after
// it) as an event stamped by the step clock, when events are on (profiling or managed mode).
void push_object_event(ObjectEventKind kind, uint32_t slot, const ObjectRecord& r, uint64_t size,
                       uint64_t live_bytes) noexcept;

struct ObjectRequest {
  size_t size = 0;
  size_t align = 0;
  size_t reserve = 0;      // >= size: an extent with room to grow in place (realloc)
  uint64_t site = 0;       // 0: the caller's call-site is captured; else the object's (a realloc that moves one)
  bool zero_first = false; // calloc: an extent that reads as zeros, if the cache has one
};

// Creates an object for a request already known to be at or above the threshold. Returns nullptr when
// the heap cannot take it (the caller then uses the system allocator). *zeroed (optional): whether the
// extent is known to read as zeros.
void* alloc_object(const ObjectRequest& request, bool* zeroed = nullptr) noexcept;

// The first half of free() for the live object in `slot`: marks it freed (false: it was not live, a double
// free, counted), counts it and sends its free event. Its bytes stay readable (not yet poisoned) until
// hand_back_extent().
bool retire_object(uint32_t slot) noexcept;
// The second half: poisons the extent and gives it back to the heap, or to the move in flight that will
// give it back when it ends.
void hand_back_extent(uint32_t slot) noexcept;
// free() of an object pointer: both halves.
void free_object(void* p) noexcept;
// malloc() of a request known to be at or above the threshold: an object, or the system's block when the
// heap cannot take it.
void* malloc_object(size_t size) noexcept;

// malloc and free, inline in the exported functions (override.cc): a request below the object threshold
// and a pointer outside the object heap cost a few loads and the system allocator's call.
inline void* malloc(size_t size) noexcept {
  if (__builtin_expect(!is_object_request(size), 1)) return fast_system_malloc(size);
  return malloc_object(size);
}
inline void free(void* p) noexcept {
  if (g_state.heap.contains(p)) return free_object(p);  // never for nullptr: not in the heap's range
  fast_system_free(p);
}

// Objects whose pages realloc moved with mremap instead of copying (realloc.cc).
uint64_t realloc_remapped() noexcept;

}  // namespace sentinel::rt
