#include "plan/plan.h"

namespace sentinel {

size_t Plan::move_count() const {
  size_t n = 0;
  for (const auto& e : events) n += e.size();
  return n;
}

const char* tier_name(Tier t) { return t == Tier::kFast ? "fast" : "slow"; }

const char* move_kind_name(MoveKind k) { return k == MoveKind::kEvict ? "evict" : "prefetch"; }

}  // namespace sentinel
