#include "plan/fault_repair.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "plan/cost_model.h"

namespace sentinel::plan_detail {
namespace {

// What an object's accesses would cost on the slow tier (the planner's value of keeping it fast).
double slow_cost_ns(const ObjectView& o, const MemorySystem& mem) {
  double v = 0;
  for (const AccessView& a : o.accesses)
    v += static_cast<double>(a.reads) * mem.read_penalty_ns() + static_cast<double>(a.writes) * mem.write_penalty_ns();
  return v;
}

}  // namespace

void repair_faults(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, uint32_t sim_steps,
                   uint32_t max_rounds, Plan* plan, FaultRepairStats* stats) {
  if (budget == 0 || mem.fault_ns_per_byte <= 0 || max_rounds == 0) return;
  std::unordered_set<uint64_t> moved;
  for (const auto& event : plan->events)
    for (const Move& m : event) moved.insert(m.tag);
  SimOptions opt;
  opt.steps = sim_steps;
  opt.pool_bytes = budget;
  opt.record_fresh = true;
  SimResult now;
  if (!simulate_plan(index, *plan, mem, opt, &now, nullptr)) return;
  const double start_ns = now.step_ns;
  for (uint32_t round = 0; round < max_rounds; ++round) {
    // Fast births without a move that faulted more than their accesses would cost slow, largest margin first.
    std::vector<std::pair<double, uint32_t>> cand;
    for (uint32_t i = 0; i < index.objects().size(); ++i) {
      const ObjectView& o = index.object(i);
      if (o.cyclic || now.object_fresh_bytes[i] == 0 || plan->birth(o.tag) != Tier::kFast || moved.count(o.tag) != 0)
        continue;
      const double margin = static_cast<double>(now.object_fresh_bytes[i]) * mem.fault_ns_per_byte - slow_cost_ns(o, mem);
      if (margin > 0) cand.push_back({margin, i});
    }
    if (cand.empty()) break;
    std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    bool improved = false;
    for (size_t take = cand.size(); take > 0 && !improved && take * 8 >= cand.size(); take /= 2) {
      Plan trial = *plan;
      for (size_t c = 0; c < take; ++c) trial.birth_tier[index.object(cand[c].second).tag] = Tier::kSlow;
      SimResult r;
      if (!simulate_plan(index, trial, mem, opt, &r, nullptr) || r.step_ns >= now.step_ns * (1 - 1e-9)) continue;
      *plan = std::move(trial);
      now = std::move(r);
      stats->sent_slow += static_cast<uint32_t>(take);
      improved = true;
    }
    if (!improved) break;
  }
  stats->saved_ns = start_ns - now.step_ns;
}

}  // namespace sentinel::plan_detail
