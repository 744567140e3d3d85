// Extent size classes: exact page counts up to 16 pages, then 8 classes per doubling, so an extent is
// at most 12.5% larger than the object it holds. Recycling is per class: a training step that frees and
// re-allocates tensors of the same shapes gets the same extents back every step.
#pragma once

#include <cstdint>

namespace sentinel {

inline constexpr uint64_t kPageSize = 4096;
inline constexpr uint64_t kHugePageSize = 2ull << 20;
inline constexpr uint32_t kNumSizeClasses = 232;

inline constexpr uint64_t pages_for(uint64_t bytes) { return (bytes + kPageSize - 1) / kPageSize; }

// Under a fast budget a freed fast extent is parked: it keeps its pages for a new fast object of its class,
// or of a smaller one down to 1/kParkedFitFactor of its size (preload/runtime.cc; the cost model's fast
// pool, plan/cost_model.h, does the same). Larger factors fault less but hold budget the objects do not
// use (16x: 130 faults per step on cnn-act, and 55% more births sent slow than at 2x).
inline constexpr uint64_t kParkedFitFactor = 2;

// REQUIRES: 1 <= pages <= 2^30.
inline constexpr uint32_t size_class_of_pages(uint64_t pages) {
  if (pages <= 16) return static_cast<uint32_t>(pages - 1);
  const uint64_t m = pages - 1;
  const uint32_t e = 63u - static_cast<uint32_t>(__builtin_clzll(m));  // >= 4
  const uint64_t rounded = (m >> (e - 3)) + 1;                         // 9..16
  return 16u + (e - 4u) * 8u + static_cast<uint32_t>(rounded - 9);
}

inline constexpr uint64_t class_pages(uint32_t cls) {
  if (cls < 16) return cls + 1;
  const uint32_t e = (cls - 16) / 8 + 4;
  const uint64_t rounded = (cls - 16) % 8 + 9;
  return rounded << (e - 3);
}

}  // namespace sentinel
