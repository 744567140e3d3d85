#include "plan/baselines.h"

#include <algorithm>

#include "plan/budget_repair.h"
#include "plan/cost_model.h"
#include "plan/occupancy_tree.h"
#include "plan/reactive_hot.h"

namespace sentinel {
namespace {

Plan empty_plan(const ProfileIndex& index, Policy p, Tier all) {
  Plan plan;
  plan.policy = policy_name(p);
  plan.period = index.period();
  plan.events.assign(index.period(), {});
  for (const ObjectView& o : index.objects()) plan.birth_tier[o.tag] = all;
  return plan;
}

// Persistent objects first (allocated before the step), then allocation events in order.
std::vector<uint32_t> allocation_order(const ProfileIndex& index) {
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < index.objects().size(); ++i)
    if (index.object(i).cyclic) order.push_back(i);
  for (uint32_t k = 0; k < index.period(); ++k)
    for (uint32_t i : index.births_at(k)) order.push_back(i);
  return order;
}

uint32_t life_start(const ObjectView& o) { return o.cyclic ? 0 : o.birth; }

double object_value(const ObjectView& o, const MemorySystem& mem) {
  double v = 0;
  for (const AccessView& a : o.accesses)
    v += static_cast<double>(a.reads) * mem.read_penalty_ns() +
         static_cast<double>(a.writes) * mem.write_penalty_ns();
  return v;
}

Plan first_touch(const ProfileIndex& index, uint64_t budget) {
  Plan plan = empty_plan(index, Policy::kFirstTouch, Tier::kSlow);
  OccupancyTree tree(index.period());
  for (uint32_t i : allocation_order(index)) {
    const ObjectView& o = index.object(i);
    if (tree.fits(life_start(o), o.life, o.size, budget)) {
      tree.add(life_start(o), o.life, static_cast<int64_t>(o.size));
      plan.birth_tier[o.tag] = Tier::kFast;
    }
  }
  return plan;
}

Plan static_ratio(const ProfileIndex& index, uint64_t budget) {
  Plan plan = empty_plan(index, Policy::kStaticRatio, Tier::kSlow);
  const double ratio = index.peak_bytes() == 0
                           ? 1.0
                           : std::min(1.0, static_cast<double>(budget) / static_cast<double>(index.peak_bytes()));
  OccupancyTree tree(index.period());
  std::vector<bool> alive(index.objects().size(), false), fast(index.objects().size(), false);
  double fast_live = 0, slow_live = 0;
  auto allocate = [&](uint32_t i) {
    const ObjectView& o = index.object(i);
    const double s = static_cast<double>(o.size);
    alive[i] = true;
    if (fast_live + s <= ratio * (fast_live + slow_live + s) + 0.5 &&
        tree.fits(life_start(o), o.life, o.size, budget)) {
      tree.add(life_start(o), o.life, static_cast<int64_t>(o.size));
      plan.birth_tier[o.tag] = Tier::kFast;
      fast[i] = true;
      fast_live += s;
    } else {
      slow_live += s;
    }
  };
  for (uint32_t i = 0; i < index.objects().size(); ++i)
    if (index.object(i).cyclic) allocate(i);
  for (uint32_t k = 0; k < index.period(); ++k) {
    for (uint32_t i : index.deaths_at(k)) {
      if (!alive[i]) continue;
      alive[i] = false;
      (fast[i] ? fast_live : slow_live) -= static_cast<double>(index.object(i).size);
    }
    for (uint32_t i : index.births_at(k)) allocate(i);
  }
  return plan;
}

Plan static_best(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget) {
  Plan plan = empty_plan(index, Policy::kStaticBest, Tier::kSlow);
  std::vector<std::pair<double, uint32_t>> cand;
  for (uint32_t i = 0; i < index.objects().size(); ++i) {
    const ObjectView& o = index.object(i);
    double v = object_value(o, mem);
    if (v > 0) cand.push_back({v / static_cast<double>(std::max<uint64_t>(1, o.size)), i});
  }
  std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  OccupancyTree tree(index.period());
  for (const auto& [density, i] : cand) {
    const ObjectView& o = index.object(i);
    if (tree.fits(life_start(o), o.life, o.size, budget)) {
      tree.add(life_start(o), o.life, static_cast<int64_t>(o.size));
      plan.birth_tier[o.tag] = Tier::kFast;
    }
  }
  return plan;
}

}  // namespace

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kSentinel: return "sentinel";
    case Policy::kAllDram: return "all-dram";
    case Policy::kAllSlow: return "all-slow";
    case Policy::kFirstTouch: return "first-touch";
    case Policy::kStaticRatio: return "static-ratio";
    case Policy::kReactiveHot: return "reactive-hot";
    case Policy::kStaticBest: return "static-best";
  }
  return "?";
}

std::vector<Policy> all_policies() {
  return {Policy::kSentinel,   Policy::kAllDram,     Policy::kAllSlow,   Policy::kFirstTouch,
          Policy::kStaticRatio, Policy::kReactiveHot, Policy::kStaticBest};
}

bool parse_policy(const std::string& name, Policy* out) {
  for (Policy p : all_policies()) {
    if (name == policy_name(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

bool make_plan(Policy policy, const ProfileIndex& index, const MemorySystem& mem,
               const PlannerConfig& config, Plan* out, std::string* error,
               const ReactiveConfig& reactive) {
  if (policy == Policy::kSentinel) return plan_sentinel(index, mem, config, out, error);
  if (!validate_memory_system(mem, error)) return false;
  const uint64_t budget = resolve_budget(config, index);
  Plan plan;
  switch (policy) {
    case Policy::kAllDram: plan = empty_plan(index, policy, Tier::kFast); break;
    case Policy::kAllSlow: plan = empty_plan(index, policy, Tier::kSlow); break;
    case Policy::kFirstTouch: plan = first_touch(index, budget); break;
    case Policy::kStaticRatio: plan = static_ratio(index, budget); break;
    case Policy::kStaticBest: plan = static_best(index, mem, budget); break;
    case Policy::kReactiveHot: {
      plan = reactive_hot_plan(index, mem, budget, reactive);
      normalize_plan(index, &plan);
      if (!enforce_budget(index, mem, budget, &plan, nullptr, error)) return false;
      break;
    }
    case Policy::kSentinel: break;
  }
  fill_summary(index, mem, policy == Policy::kAllDram ? index.peak_bytes() : budget, &plan);
  *out = std::move(plan);
  return true;
}

}  // namespace sentinel
