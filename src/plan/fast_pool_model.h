// The runtime's fast memory under a budget as the cost model replays it (plan/cost_model.h): live fast
// extents plus parked ones, the extents of freed fast objects whose pages are kept for the next fast births
// (place/budget_placer.h, preload/runtime.cc). It follows the runtime's rules, by size class
// (core/size_class.h) and extent by extent, because that is where the faults come from:
//   - an object holds an extent of its size class; a freed fast object's extent is parked, in the budget,
//     on its class's list (last in, first out, as the heap's cache lists, core/object_heap.h);
//   - a fast birth takes the last parked extent of its class, or of a larger class up to kParkedFitFactor
//     times its extent, if that extent still has at least its extent's pages (the heap looks at each list's
//     head only); it keeps all the pages the extent has, and counts them (its charge), so the next birth
//     of the larger class finds them, until a birth first finds no room (below): from then on the pages
//     past the birth's own class are dropped, and the extent keeps its class with fewer pages
//     (preload/runtime.cc, place_extent and State::drop_parked_tails);
//   - finding none, it makes room for its extent by dropping parked ones (core/object_heap.h,
//     trim_cached: the head of the smallest class that covers the shortfall, failing that the largest
//     classes first), only when that lets it fit (preload/runtime.cc, make_fast_room), and takes the last
//     parked extent of its own class whatever pages it kept (allocate), or a fresh one: the pages it lacks
//     are faulted in;
//   - a prefetch takes its room when it starts the same way, after the evictions queued ahead of it have
//     given theirs back.
// With parked bytes pooled regardless of class (the model before this one), a birth whose class no parked
// extent had found pages all the same: densenet121 (batch 16, 128 px, its best static plan at 20%) was
// modeled at 0 fresh bytes per step while the runtime faulted in 350-440 MB.
// What it leaves out: a birth the runtime sends slow for want of room (counted here as fast, over the pool,
// as the cost model's residency counts it), the slow pool's own extents, and the order in which frees and
// births of one phase reach the runtime (here: the phase's frees first).
//
// Thread safety: none (one replay).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/size_class.h"

namespace sentinel {

class FastPoolModel {
 public:
  // The extent a fast object holds: its heap class and the bytes of it that have pages (and count).
  struct Extent {
    uint32_t cls = 0;
    uint64_t charge = 0;
  };

  // The extent an object of `size` bytes gets when one is carved: its size class's bytes.
  static uint64_t extent_bytes(uint64_t size) noexcept;

  explicit FastPoolModel(uint64_t capacity) noexcept : capacity_(capacity) {}

  // An object of `size` bytes counted fast when the replay starts (persistent, born fast): *held its extent.
  void add_live(uint64_t size, Extent* held);
  // A fast birth of `size` bytes; *held is the extent it gets. Returns the bytes of pages it faults in (0 when
  // a parked extent fits).
  uint64_t birth(uint64_t size, Extent* held);
  // A fast object freed: its extent is parked.
  void free(const Extent& held);
  // A fast object that stops counting fast (its eviction has run): its pages leave.
  void leave(const Extent& held) noexcept { live_ -= held.charge; }
  // A prefetch of an object of `size` bytes starts; `leaving` bytes of evictions queued ahead of it are
  // about to leave. *held is the extent it counts in fast memory: the one it held when it was fast before
  // (its charge not 0), else one of its class. Returns the parked bytes dropped for its
  // room.
  uint64_t arrive(uint64_t size, uint64_t leaving, Extent* held);

  uint64_t live_bytes() const noexcept { return live_; }
  uint64_t parked_bytes() const noexcept { return parked_bytes_; }
  // Whether births still keep the pages of larger parked extents (no birth has found no room yet).
  bool keeps_tails() const noexcept { return keep_tails_; }
  // Parked bytes dropped from the pool's lists with pages past a smaller birth's class.
  uint64_t tails_dropped_bytes() const noexcept { return tails_; }

 private:
  // Drops parked extents so that `extent` more bytes fit beside `live` live bytes, if dropping them can
  // make it fit; returns the bytes dropped.
  uint64_t make_room(uint64_t live, uint64_t extent);
  uint64_t pop(uint32_t cls);

  uint64_t capacity_;
  uint64_t live_ = 0;
  uint64_t parked_bytes_ = 0;
  uint64_t tails_ = 0;
  bool keep_tails_ = true;
  std::array<std::vector<uint64_t>, kNumSizeClasses> parked_{};  // per class, the parked extents' charges
};

}  // namespace sentinel
