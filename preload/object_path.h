// The object paths shared by the allocation functions of runtime.cc and realloc.cc: internal to the preload.
//
// Thread safety: every function may be called from any program thread, concurrently; none allocates, none
// holds a lock across a call out of Sentinel (runtime.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/object_heap.h"
#include "runtime_state.h"

namespace sentinel::rt {

extern thread_local int t_inside __attribute__((tls_model("initial-exec")));
// Requests below the object threshold this thread made (outside Sentinel) since its last object: how much
// work separates two objects. The step detector tells the boundary of a step (a forward pass, an optimizer
// step, the loop's own code, all below the threshold) from the iterations of a loop inside the step by it
// (StepDetector::observe). Saturates.
extern thread_local uint32_t t_small_requests __attribute__((tls_model("initial-exec")));

// Marks this thread as inside Sentinel, so allocations made by what Sentinel calls (libunwind,
// dladdr, the logger) go straight to the system allocator instead of recursing.
class ReentrancyGuard {
 public:
  ReentrancyGuard() noexcept { ++t_inside; }
  ~ReentrancyGuard() { --t_inside; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;
  static bool inside() noexcept { return t_inside != 0; }
};

inline bool is_object_request(size_t size) noexcept {
  if (ReentrancyGuard::inside()) return false;
  if (size >= g_state.threshold.load(std::memory_order_relaxed)) return true;
  if (t_small_requests != UINT32_MAX) ++t_small_requests;
  return false;
}

// In an AddressSanitizer build (scripts/sanitizers.sh) an object's own bytes are addressable and the rest
// of its extent is poisoned, and a freed extent is poisoned whole (nothing in Sentinel reads or writes an
// extent's bytes after free). No-ops in other builds.
void expose_object(const ObjectRecord& r) noexcept;
void poison_extent(const ObjectRecord& r) noexcept;
// Raises the peak of live object bytes (and with it the heap's cache limit) to `live`.
void update_peak(uint64_t live) noexcept;

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

// Objects whose pages realloc moved with mremap instead of copying (realloc.cc).
uint64_t realloc_remapped() noexcept;

}  // namespace sentinel::rt
