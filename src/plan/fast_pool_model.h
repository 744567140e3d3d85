// The runtime's fast memory under a budget as the cost model replays it (plan/cost_model.h): live fast
// extents plus parked ones, the extents of freed fast objects whose pages are kept for the next fast births
// (place/budget_placer.h, preload/runtime.cc). It follows the runtime's rules, by size class
// (core/size_class.h), because that is where the faults come from:
//   - an object holds an extent of its size class; a freed fast object's extent is parked, in the budget;
//   - a fast birth takes a parked extent of its class, or of a larger one up to kParkedFitFactor times its
//     extent, whose pages past its own class are dropped (preload/runtime.cc, drop_tail);
//   - finding none, it makes room for a fresh extent by dropping parked ones (core/object_heap.h,
//     trim_cached: one extent of the smallest class that covers the shortfall, failing that the largest
//     classes first), only when that lets it fit (preload/runtime.cc, make_fast_room); its pages are
//     faulted in fresh;
//   - a prefetch takes its room when it starts the same way, after the evictions queued ahead of it have
//     given theirs back.
// With parked bytes pooled regardless of class (the model before this one), a birth whose class no parked
// extent had found pages all the same: densenet121 (batch 16, 128 px, its best static plan at 20%) was
// modeled at 0 fresh bytes per step while the runtime faulted in 350-440 MB.
// What it leaves out: which parked extent of a class a birth gets (all of a class are alike here), the tail
// a birth dropped (the extent becomes one of the birth's class), the order of the heap's cache lists, and a
// birth the runtime sends slow for want of room (counted here as fast, over the pool, as the cost model's
// residency counts it).
//
// Thread safety: none (one replay). No allocation after construction.
#pragma once

#include <array>
#include <cstdint>

#include "core/size_class.h"

namespace sentinel {

class FastPoolModel {
 public:
  // The extent an object of `size` bytes gets: its size class's bytes.
  static uint64_t extent_bytes(uint64_t size) noexcept;

  explicit FastPoolModel(uint64_t capacity) noexcept : capacity_(capacity) {}

  // An object of `size` bytes counted fast when the replay starts (persistent, born fast).
  void add_live(uint64_t size) noexcept { live_ += extent_bytes(size); }
  // A fast birth of `size` bytes. Returns the bytes of pages it faults in (0 when a parked extent fits).
  uint64_t birth(uint64_t size) noexcept;
  // A fast object of `size` bytes freed: its extent is parked.
  void free(uint64_t size) noexcept;
  // A fast object of `size` bytes that stops counting fast (its eviction has run): its pages leave.
  void leave(uint64_t size) noexcept;
  // A prefetch of an object of `size` bytes starts; `leaving` bytes of evictions queued ahead of it are
  // about to leave. Returns the parked bytes dropped for its room.
  uint64_t arrive(uint64_t size, uint64_t leaving) noexcept;

  uint64_t live_bytes() const noexcept { return live_; }
  uint64_t parked_bytes() const noexcept { return parked_bytes_; }

 private:
  // Drops parked extents so that `extent` more bytes fit beside `live` live bytes, if dropping them can
  // make it fit; returns the bytes dropped.
  uint64_t make_room(uint64_t live, uint64_t extent) noexcept;
  void drop(uint32_t cls) noexcept;

  uint64_t capacity_;
  uint64_t live_ = 0;
  uint64_t parked_bytes_ = 0;
  std::array<uint32_t, kNumSizeClasses> parked_{};  // parked extents per class
};

}  // namespace sentinel
