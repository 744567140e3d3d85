#include "core/site_counter.h"

#include "core/hash.h"

namespace sentinel {

uint32_t SiteCounter::next(uint64_t site) noexcept {
  uint32_t at = static_cast<uint32_t>(mix64(site)) & (kSlots - 1);
  for (uint32_t probe = 0; probe < 32; ++probe, at = (at + 1) & (kSlots - 1)) {
    Slot& s = slots_[at];
    if (s.epoch != epoch_) {
      // Free in this epoch (stale entries from earlier steps are reused).
      s = Slot{site, epoch_, 1};
      return 0;
    }
    if (s.site == site) return s.count++;
  }
  // More distinct call-sites in one step than the table holds near this hash: occurrence unknown.
  ++overflows_;
  return 0xffffffffu;
}

}  // namespace sentinel
