// Plan: where every object of a step lives over the step clock. It is what the planner and every
// baseline policy produce, what the cost model replays, what the runtime's migration engine executes,
// and what plan_io.h writes to a file (docs/plan-format.md).
//
// Semantics (the cost model, cost_model.h, is the reference implementation):
//  - birth_tier[tag]: the tier an object is allocated on at its birth event. For a persistent object
//    it is the tier at the start of every step (a valid plan leaves it there at the end of the step).
//    Tags missing from the map are born on the slow tier.
//  - events[k]: migrations issued at step-clock event k (right after the allocation of event k), in
//    order. All migrations go through one channel, first in first out; a migration of a tag whose
//    object is not alive at event k, or that is already on (or moving to) the target tier, is a no-op.
//  - An object occupies fast memory from the moment its prefetch is issued until its eviction has
//    completed; the planner keeps that occupancy within budget_bytes at every event.
//
// Thread safety: plain value; no internal synchronisation.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sentinel {

enum class Tier : uint8_t { kFast = 0, kSlow = 1 };
enum class MoveKind : uint8_t { kEvict = 0, kPrefetch = 1 };  // fast->slow, slow->fast

struct Move {
  uint64_t tag = 0;
  MoveKind kind = MoveKind::kEvict;
  bool operator==(const Move&) const = default;
};

struct PlanSummary {
  uint64_t budget_bytes = 0;
  uint64_t expected_dram_peak_bytes = 0;  // fast-tier peak incl. in-flight copies, measured durations
  uint64_t migrated_bytes_per_step = 0;
  uint32_t prefetches = 0;
  uint32_t evictions = 0;
  uint32_t late_prefetch_risk = 0;        // prefetches not finished before the use (measured durations)
  double modeled_step_ns = 0;             // cost model, with the tier model the plan was made for
  bool budget_insufficient = false;       // the budget is below what the policy needs (see message)
  std::string message;                    // human-readable notes, e.g. why the budget is insufficient
  bool operator==(const PlanSummary&) const = default;
};

struct Plan {
  std::string policy;  // "sentinel", "all-dram", ...
  uint32_t period = 0;
  std::unordered_map<uint64_t, Tier> birth_tier;
  std::vector<std::vector<Move>> events;  // size == period
  PlanSummary summary;

  Tier birth(uint64_t tag) const {
    auto it = birth_tier.find(tag);
    return it == birth_tier.end() ? Tier::kSlow : it->second;
  }
  size_t move_count() const;
  // To move an object's prefetches earlier see advance_prefetch() in budget_repair.h.
};

const char* tier_name(Tier t);
const char* move_kind_name(MoveKind k);

}  // namespace sentinel
