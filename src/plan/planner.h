// The Sentinel planner: from a step profile, a fast-memory budget and a tier model, a Plan that keeps
// short-lived objects in a reserved share of fast memory, sends long-lived objects to the slow tier
// during long gaps between uses and prefetches them back early enough, leaves cold objects slow, and
// never exceeds the budget at any event counting in-flight copies. docs/planner.md explains the
// algorithm, its parameters and its guarantees.
//
// Thread safety: plan_sentinel is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "plan/plan.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

struct PlannerConfig {
  // Fast-memory budget: budget_bytes when non-zero, else budget_fraction of the profile's peak.
  uint64_t budget_bytes = 0;
  double budget_fraction = 0.2;
  // Objects alive at most this many phases are "short-lived": kept fast in a reserved share of the
  // budget (at most short_reserve_max_share of it), whole lifetime, no migration.
  uint32_t short_lived_phases = 4;
  double short_reserve_max_share = 0.5;
  // Two uses of an object are split by a migration round trip only if at least min_gap_phases
  // phases lie between them and the gap lasts gap_slack times the evict + prefetch copy time.
  uint32_t min_gap_phases = 2;
  double gap_slack = 1.25;
  // A prefetch starts prefetch_slack copy-times (plus lookahead) before the use it serves.
  double prefetch_slack = 1.25;
  uint32_t lookahead_phases = 1;   // extra phases of lookahead for every prefetch
  uint64_t lookahead_ns = 0;       // extra time of lookahead for every prefetch
  // Per-object extra lookahead in phases: the runtime raises it for a tag whose prefetch was late.
  std::unordered_map<uint64_t, uint32_t> extra_lookahead_phases;
  // Value of a window = accesses saved * slow penalty - migration_cost_factor * copy time.
  double migration_cost_factor = 0.25;
  uint32_t late_fix_rounds = 6;    // rounds of "replay, move late prefetches earlier"
  uint32_t sim_steps = 3;          // steps replayed by the internal checks
  // Alternative windows offered to the selection (planner_windows.cc): per group, up to
  // prefix_alternatives shorter windows; per object, up to merged_windows runs of several groups
  // held fast through the gaps between them. 0 turns either off.
  uint32_t prefix_alternatives = 2;
  uint32_t merged_windows = 32;
  // Unselected windows of highest benefit offered a swap against the selected windows they overlap
  // after the greedy (planner_select.cc); 0 turns the exchange pass off.
  uint32_t exchange_candidates = 128;
  // Stalled prefetches examined by the final stall repair (stall_repair.h); 0 turns it off.
  uint32_t stall_repair_attempts = 8;
  // Also plan from Sentinel's best static placement held fast (planner.cc) and keep the better plan.
  bool seed_with_static_best = true;
  // Rounds of the fault repair (fault_repair.h): fast births that fault in more than their accesses save
  // are sent slow; 0 turns it off.
  uint32_t fault_repair_rounds = 4;
  // Also replay the first-touch and static-ratio placements (fault-repaired) and keep one that is faster.
  bool compare_static_baselines = true;
};

// The budget in bytes the config asks for on this profile.
uint64_t resolve_budget(const PlannerConfig& config, const ProfileIndex& index);

// Fills *out (policy "sentinel") including its summary. Returns false only for invalid input
// (invalid memory system, config out of range); a budget too small yields a best-effort plan with
// summary.budget_insufficient set and an explanation in summary.message.
bool plan_sentinel(const ProfileIndex& index, const MemorySystem& mem, const PlannerConfig& config,
                   Plan* out, std::string* error);

// Shared by all policies: fills summary fields from the budget check and the cost model.
void fill_summary(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, Plan* plan);

}  // namespace sentinel
