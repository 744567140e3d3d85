#include "plan/stall_repair.h"

#include <algorithm>
#include <set>
#include <utility>

#include "plan/budget_repair.h"
#include "plan/cost_model.h"

namespace sentinel::plan_detail {
namespace {

// Plan without the moves at (event, position) pairs.
Plan without(const Plan& plan, std::vector<std::pair<uint32_t, size_t>> drop) {
  Plan out = plan;
  std::sort(drop.begin(), drop.end(), std::greater<>());
  for (const auto& [k, i] : drop) out.events[k].erase(out.events[k].begin() + static_cast<int64_t>(i));
  return out;
}

// The eviction of `tag` that precedes the prefetch at (k, i) within the object's lifetime, if the
// object's previous move is an eviction.
bool previous_eviction(const ProfileIndex& index, const Plan& plan, const ObjectView& o, uint32_t k,
                       size_t i, std::pair<uint32_t, size_t>* at) {
  const uint32_t P = index.period();
  for (uint32_t back = 0; back < P; ++back) {
    const uint32_t e = (k + P - back) % P;
    if (!o.cyclic && back > 0 && !index.alive_at(o, e)) return false;
    const auto& ev = plan.events[e];
    for (size_t j = (back == 0 ? i : ev.size()); j-- > 0;) {
      if (ev[j].tag != o.tag) continue;
      if (ev[j].kind != MoveKind::kEvict) return false;
      *at = {e, j};
      return true;
    }
    if (!o.cyclic && e == o.birth) return false;
  }
  return false;
}

}  // namespace

void repair_stalls(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                   uint32_t sim_steps, uint32_t max_attempts, Plan* plan, StallRepairStats* stats) {
  SimOptions model;
  model.steps = sim_steps;
  model.record_moves = true;
  model.pool_bytes = budget;
  std::set<std::pair<uint64_t, uint32_t>> tried;  // (tag, event) of prefetches already examined
  for (uint32_t attempt = 0; attempt < max_attempts; ++attempt) {
    SimResult r;
    if (!simulate_plan(index, *plan, mem, model, &r, nullptr) || r.stall_ns <= 0) return;
    // The worst stalled prefetch not examined yet.
    const std::vector<uint32_t> off = move_offsets(*plan);
    double worst = 0;
    uint32_t wk = 0;
    size_t wi = 0;
    for (uint32_t k = 0; k < plan->events.size(); ++k) {
      for (size_t i = 0; i < plan->events[k].size(); ++i) {
        const double s = r.move_stall_ns[off[k] + i];
        if (s > worst && !tried.count({plan->events[k][i].tag, k})) {
          worst = s;
          wk = k;
          wi = i;
        }
      }
    }
    if (worst <= 0) return;
    const Move m = plan->events[wk][wi];
    tried.insert({m.tag, wk});
    const ObjectView& o = index.object(static_cast<uint32_t>(index.find(m.tag)));
    Plan best;
    double best_ns = r.step_ns;
    bool best_merge = false;
    std::pair<uint32_t, size_t> ev;
    if (previous_eviction(index, *plan, o, wk, wi, &ev)) {
      Plan merged = without(*plan, {{wk, wi}, ev});
      normalize_plan(index, &merged);
      SimResult rm;
      if (check_plan_budget(index, merged, mem, budget, nullptr) == 0 &&
          simulate_plan(index, merged, mem, model, &rm, nullptr) && rm.step_ns < best_ns) {
        best = std::move(merged);
        best_ns = rm.step_ns;
        best_merge = true;
      }
    }
    for (const FastInterval& f : fast_intervals(index, *plan, mem, {})) {
      if (f.start_move != static_cast<int64_t>(off[wk] + wi)) continue;
      Plan dropped = *plan;
      drop_intervals(index, {f}, &dropped);
      normalize_plan(index, &dropped);
      SimResult rd;
      // Dropping never raises residency (budget_repair.h), no budget check needed.
      if (simulate_plan(index, dropped, mem, model, &rd, nullptr) && rd.step_ns < best_ns) {
        best = std::move(dropped);
        best_ns = rd.step_ns;
        best_merge = false;
      }
      break;
    }
    if (best_ns < r.step_ns) {
      best.summary = plan->summary;
      *plan = std::move(best);
      if (stats != nullptr) (best_merge ? stats->merged : stats->dropped) += 1;
    }
  }
}

}  // namespace sentinel::plan_detail
