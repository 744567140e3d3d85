// Occurrence numbers of call-sites within the current step: the n-th allocation from a call-site in a
// step gets occurrence n, so the same tensor of the same layer gets the same tag every step.
// reset() at each step boundary is O(1): entries carry the epoch they were counted in.
//
// Thread safety: none; the caller serialises (the runtime holds its step-clock lock).
#pragma once

#include <cstdint>

namespace sentinel {

class SiteCounter {
 public:
  static constexpr uint32_t kSlots = 8192;  // power of two

  // Returns how many times `site` was counted since the last reset(), then counts it once more.
  uint32_t next(uint64_t site) noexcept;
  void reset() noexcept { ++epoch_; }
  uint64_t overflows() const noexcept { return overflows_; }

 private:
  struct Slot {
    uint64_t site;
    uint32_t epoch;  // 0 = never used
    uint32_t count;
  };
  Slot slots_[kSlots] = {};
  uint32_t epoch_ = 1;
  uint64_t overflows_ = 0;
};

}  // namespace sentinel
