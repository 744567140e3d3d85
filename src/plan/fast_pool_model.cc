#include "plan/fast_pool_model.h"

namespace sentinel {
namespace {

uint32_t class_of(uint64_t size) noexcept { return size_class_of_pages(pages_for(size == 0 ? 1 : size)); }
uint64_t class_bytes(uint32_t cls) noexcept { return class_pages(cls) * kPageSize; }

}  // namespace

uint64_t FastPoolModel::extent_bytes(uint64_t size) noexcept { return class_bytes(class_of(size)); }

void FastPoolModel::drop(uint32_t cls) noexcept {
  --parked_[cls];
  parked_bytes_ -= class_bytes(cls);
}

uint64_t FastPoolModel::birth(uint64_t size) noexcept {
  const uint32_t cls = class_of(size);
  const uint64_t extent = class_bytes(cls);
  // A parked extent of its class or a larger one up to kParkedFitFactor times its extent, the smallest
  // first (core/object_heap.h, take_resident); its pages past the birth's class are dropped.
  for (uint32_t c = cls; c < kNumSizeClasses && class_bytes(c) <= kParkedFitFactor * extent; ++c) {
    if (parked_[c] == 0) continue;
    drop(c);
    live_ += extent;
    return 0;
  }
  make_room(live_, extent);
  live_ += extent;
  return extent;
}

void FastPoolModel::free(uint64_t size) noexcept {
  const uint32_t cls = class_of(size);
  live_ -= class_bytes(cls);
  ++parked_[cls];
  parked_bytes_ += class_bytes(cls);
}

void FastPoolModel::leave(uint64_t size) noexcept { live_ -= extent_bytes(size); }

uint64_t FastPoolModel::arrive(uint64_t size, uint64_t leaving) noexcept {
  const uint64_t extent = extent_bytes(size);
  const uint64_t dropped = make_room(live_ > leaving ? live_ - leaving : 0, extent);
  live_ += extent;
  return dropped;
}

uint64_t FastPoolModel::make_room(uint64_t live, uint64_t extent) noexcept {
  const uint64_t need = live + parked_bytes_ + extent;
  const uint64_t shortfall = need > capacity_ ? need - capacity_ : 0;
  // Parked pages that cannot make room are kept (preload/runtime.cc, make_fast_room).
  if (shortfall == 0 || shortfall > parked_bytes_) return 0;
  uint64_t dropped = 0;
  // One extent of the smallest class that covers the shortfall drops the fewest pages; failing that, the
  // largest classes first (core/object_heap.h, trim_cached).
  const uint32_t fits = shortfall > class_bytes(kNumSizeClasses - 1) ? kNumSizeClasses : class_of(shortfall);
  for (uint32_t c = fits; c < kNumSizeClasses; ++c) {
    if (parked_[c] == 0) continue;
    drop(c);
    dropped += class_bytes(c);
    break;
  }
  for (uint32_t c = kNumSizeClasses; c-- > 0 && dropped < shortfall;) {
    while (parked_[c] > 0 && dropped < shortfall) {
      drop(c);
      dropped += class_bytes(c);
    }
  }
  return dropped;
}

}  // namespace sentinel
