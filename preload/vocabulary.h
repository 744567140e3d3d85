// Where the runtime's words for the same things meet: a plan's Tier, a heap pool, the birth table's and the
// placer's wants, and the migration engine's queue class. A NUMA node's pool is the placer's to say
// (BudgetPlacer::node_of_pool; preload/migration.cc maps a node back to its pool itself, pool_of_node).
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
