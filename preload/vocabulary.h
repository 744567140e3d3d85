// The one place where the runtime's words for the same things meet: a plan's Tier, a heap pool, a NUMA node,
// the placer's Want and the migration engine's queue class. Every conversion goes through here.
#pragma once

#include "manage/birth_table.h"
#include "migrate/engine.h"
#include "place/budget_placer.h"
#include "plan/plan.h"

namespace sentinel::rt {

inline place::Want want_of(manage::BirthWant w) noexcept {
  switch (w) {
    case manage::BirthWant::kFast: return place::Want::kFast;
    case manage::BirthWant::kSlow: return place::Want::kSlow;
    case manage::BirthWant::kFirstTouch: break;
  }
  return place::Want::kAny;
}

inline uint8_t pool_of(Tier t) noexcept { return t == Tier::kFast ? place::kFastPool : place::kSlowPool; }
inline Tier tier_of_pool(uint8_t pool) noexcept { return pool == place::kFastPool ? Tier::kFast : Tier::kSlow; }

// Planned moves and programs' own moves (sentinel_move_object) share one first-in-first-out queue class:
// the order of issue is the order of execution, as the cost model assumes.
inline constexpr migrate::Priority kMovePriority = migrate::Priority::kNormal;

}  // namespace sentinel::rt
