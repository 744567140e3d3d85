// Baseline placement policies, all expressed as Plans so that the same cost model replays them next to
// the Sentinel planner (docs/planner.md, "Baselines"):
//   all-dram      every object on the fast tier (the unconstrained reference; ignores the budget)
//   all-slow      every object on the slow tier
//   first-touch   fast at allocation while the budget has room, else slow; no migration
//   static-ratio  memkind memtier STATIC_RATIO: each allocation goes to the tier that keeps the
//                 fast:slow bytes of live objects closest to budget:(peak - budget); no migration
//   reactive-hot  Linux NUMA-balancing tiering / TPP: objects accessed in a phase are promoted at the
//                 next event (rate-limited), the least recently used are demoted when fast is full
//   static-best   AutoTM's idea: the set kept fast for its whole lifetime, chosen by value per byte
//   sentinel      the planner (planner.h)
// Every policy except all-dram stays within the budget at every event (checked by the tests).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/planner.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

enum class Policy { kSentinel, kAllDram, kAllSlow, kFirstTouch, kStaticRatio, kReactiveHot, kStaticBest };

const char* policy_name(Policy p);
bool parse_policy(const std::string& name, Policy* out);
std::vector<Policy> all_policies();  // sentinel first, then the baselines in the order above

struct ReactiveConfig {
  double promote_rate_gbps = 0;  // promotion rate limit; 0: the migration bandwidth
  uint32_t warm_steps = 3;       // steps simulated before the schedule is recorded
};

// Budget from config (resolve_budget). Returns false only for invalid input.
bool make_plan(Policy policy, const ProfileIndex& index, const MemorySystem& mem,
               const PlannerConfig& config, Plan* out, std::string* error,
               const ReactiveConfig& reactive = ReactiveConfig{});

}  // namespace sentinel
