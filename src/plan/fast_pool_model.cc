#include "plan/fast_pool_model.h"

namespace sentinel {
namespace {

uint32_t class_of(uint64_t size) noexcept { return size_class_of_pages(pages_for(size == 0 ? 1 : size)); }
uint64_t class_bytes(uint32_t cls) noexcept { return class_pages(cls) * kPageSize; }

}  // namespace

uint64_t FastPoolModel::extent_bytes(uint64_t size) noexcept { return class_bytes(class_of(size)); }

uint64_t FastPoolModel::pop(uint32_t cls) {
  const uint64_t charge = parked_[cls].back();
  parked_[cls].pop_back();
  parked_bytes_ -= charge;
  return charge;
}

void FastPoolModel::add_live(uint64_t size, Extent* held) {
  const uint32_t cls = class_of(size);
  *held = Extent{cls, class_bytes(cls)};
  live_ += held->charge;
}

uint64_t FastPoolModel::birth(uint64_t size, Extent* held) {
  const uint32_t cls = class_of(size);
  const uint64_t extent = class_bytes(cls);
  // The last parked extent of its class or of a larger one up to kParkedFitFactor times its extent, the
  // smallest class first, that still has the birth's pages (core/object_heap.h, take_resident), with all
  // the pages it has while the pool keeps tails.
  for (uint32_t c = cls; c < kNumSizeClasses && class_bytes(c) <= kParkedFitFactor * extent; ++c) {
    if (parked_[c].empty() || parked_[c].back() < extent) continue;
    const uint64_t charge = pop(c);
    const uint64_t kept = keep_tails_ ? charge : extent;
    tails_ += charge - kept;
    *held = Extent{c, kept};
    live_ += kept;
    return 0;
  }
  // Failing that, room for its whole extent, and then the last parked extent of its own class whatever pages
  // it kept (the heap's cache list, core/object_heap.h, allocate): only the pages it lacks fault in.
  make_room(live_, extent);
  // No room even so: the runtime sends the birth slow (counted here as fast, over the pool) and drops
  // the tails of larger parked extents from then on.
  if (live_ + parked_bytes_ + extent > capacity_) keep_tails_ = false;
  const uint64_t kept = parked_[cls].empty() ? 0 : pop(cls);
  *held = Extent{cls, extent};
  live_ += extent;
  return extent - kept;
}

void FastPoolModel::free(const Extent& held) {
  live_ -= held.charge;
  parked_[held.cls].push_back(held.charge);
  parked_bytes_ += held.charge;
}

uint64_t FastPoolModel::arrive(uint64_t size, uint64_t leaving, Extent* held) {
  // An object born fast and evicted comes back in the extent it had, with the charge it had; one born slow
  // has an extent of its class.
  if (held->charge == 0) {
    const uint32_t cls = class_of(size);
    *held = Extent{cls, class_bytes(cls)};
  }
  const uint64_t dropped = make_room(live_ > leaving ? live_ - leaving : 0, held->charge);
  live_ += held->charge;
  return dropped;
}

uint64_t FastPoolModel::make_room(uint64_t live, uint64_t extent) {
  const uint64_t need = live + parked_bytes_ + extent;
  const uint64_t shortfall = need > capacity_ ? need - capacity_ : 0;
  // Parked pages that cannot make room are kept (preload/runtime.cc, make_fast_room).
  if (shortfall == 0 || shortfall > parked_bytes_) return 0;
  uint64_t dropped = 0;
  // The head of the smallest class that covers the shortfall drops the fewest pages; failing that, the
  // largest classes first (core/object_heap.h, trim_cached).
  const uint32_t fits = shortfall > class_bytes(kNumSizeClasses - 1) ? kNumSizeClasses : class_of(shortfall);
  for (uint32_t c = fits; c < kNumSizeClasses; ++c) {
    if (parked_[c].empty()) continue;
    dropped += pop(c);
    break;
  }
  for (uint32_t c = kNumSizeClasses; c-- > 0 && dropped < shortfall;) {
    while (!parked_[c].empty() && dropped < shortfall) dropped += pop(c);
  }
  return dropped;
}

}  // namespace sentinel
