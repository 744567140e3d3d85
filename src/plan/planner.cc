#include "plan/planner.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "plan/baselines.h"
#include "plan/budget_repair.h"
#include "plan/channel_model.h"
#include "plan/cost_model.h"
#include "plan/fault_repair.h"
#include "plan/occupancy_tree.h"
#include "plan/planner_select.h"
#include "plan/planner_windows.h"
#include "plan/stall_repair.h"

namespace sentinel {
namespace {

using plan_detail::Window;

using plan_detail::occ_len;
using plan_detail::select_windows;

// Builds the plan of the selected windows. move_window[id] = window of flattened move id.
Plan build_plan(const ProfileIndex& index, const std::vector<Window>& win, std::vector<int64_t>* move_window) {
  const uint32_t P = index.period();
  Plan plan;
  plan.policy = "sentinel";
  plan.period = P;
  plan.events.assign(P, {});
  for (const ObjectView& o : index.objects()) plan.birth_tier[o.tag] = Tier::kSlow;
  struct Item { uint32_t event; int kind_rank; uint64_t deadline; Move move; int64_t window; };
  std::vector<Item> items;
  for (size_t j = 0; j < win.size(); ++j) {
    const Window& w = win[j];
    if (!w.selected) continue;
    const ObjectView& o = index.object(w.obj);
    if (w.born_fast || w.always) plan.birth_tier[o.tag] = Tier::kFast;
    if (w.always) continue;
    if (!w.born_fast) {
      uint32_t ev = plan_detail::abs_phase(index, o, w.start);
      uint64_t deadline = plan_detail::span_ns(index, o, w.start, w.first_use);
      items.push_back({ev, 0, deadline, Move{o.tag, MoveKind::kPrefetch}, static_cast<int64_t>(j)});
    }
    if (w.evict)
      items.push_back({plan_detail::abs_phase(index, o, w.last_use + 1), 1, 0,
                       Move{o.tag, MoveKind::kEvict}, static_cast<int64_t>(j)});
  }
  // Within an event: prefetches first, most urgent first, then evictions.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.event != b.event) return a.event < b.event;
    if (a.kind_rank != b.kind_rank) return a.kind_rank < b.kind_rank;
    return a.deadline < b.deadline;
  });
  move_window->clear();
  for (const Item& it : items) {
    plan.events[it.event].push_back(it.move);
    move_window->push_back(it.window);
  }
  normalize_plan(index, &plan);  // persistent objects: birth tier = tier at the step boundary
  return plan;
}

// Replays the plan (measured durations) and moves late prefetches earlier where the budget allows.
void fix_late_prefetches(const ProfileIndex& index, const MemorySystem& mem, const PlannerConfig& cfg,
                         uint64_t budget, std::vector<Window>* win, OccupancyTree* tree) {
  const uint32_t P = index.period();
  for (uint32_t round = 0; round < cfg.late_fix_rounds; ++round) {
    std::vector<int64_t> move_window;
    Plan plan = build_plan(index, *win, &move_window);
    SimOptions opt;
    opt.slow_penalty = false;
    opt.steps = cfg.sim_steps;
    opt.record_moves = true;
    SimResult r;
    if (!simulate_plan(index, plan, mem, opt, &r, nullptr) || r.late_prefetches == 0) return;
    bool changed = false;
    for (size_t id = 0; id < r.move_stall_ns.size() && id < move_window.size(); ++id) {
      if (r.move_stall_ns[id] <= 0) continue;
      Window& w = (*win)[move_window[id]];
      if (w.born_fast || w.start <= w.lo) continue;
      const ObjectView& o = index.object(w.obj);
      const double need = 1.25 * r.move_stall_ns[id];
      int64_t p = w.start;
      double acc = 0;
      while (p > w.lo && acc < need) {
        --p;
        acc += static_cast<double>(index.duration(plan_detail::abs_phase(index, o, p)));
      }
      bool to_birth = !o.cyclic && p <= 1 && w.lo <= 1;
      if (to_birth) p = 0;
      uint32_t ext_start = plan_detail::abs_phase(index, o, p);
      uint32_t ext_len = static_cast<uint32_t>(std::min<int64_t>(w.start - p, P));
      if (ext_len == 0 || !tree->fits(ext_start, ext_len, o.size, budget)) continue;
      tree->add(ext_start, ext_len, static_cast<int64_t>(o.size));
      w.start = p;
      if (to_birth) w.born_fast = true;
      changed = true;
    }
    if (!changed) return;
  }
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  return buf;
}

}  // namespace

uint64_t resolve_budget(const PlannerConfig& config, const ProfileIndex& index) {
  if (config.budget_bytes > 0) return config.budget_bytes;
  return static_cast<uint64_t>(std::max(0.0, config.budget_fraction) * static_cast<double>(index.peak_bytes()));
}

void fill_summary(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, Plan* plan) {
  PlanSummary& s = plan->summary;
  s.budget_bytes = budget;
  // Measured durations are the worst case for residency (no stalls either, see cost_model.h) and
  // for lateness (with stalls, so one late prefetch does not make every later one look late).
  uint64_t peak = 0;
  check_plan_budget(index, *plan, mem, budget, &peak);
  s.expected_dram_peak_bytes = peak;
  SimOptions check;
  check.slow_penalty = false;
  SimResult r;
  if (simulate_plan(index, *plan, mem, check, &r, nullptr)) {
    s.migrated_bytes_per_step = r.migrated_bytes;
    s.late_prefetch_risk = r.late_prefetches;
  }
  SimResult modeled;
  SimOptions as_run;
  as_run.pool_bytes = budget;
  if (simulate_plan(index, *plan, mem, as_run, &modeled, nullptr)) s.modeled_step_ns = modeled.step_ns;
  s.prefetches = s.evictions = 0;
  for (const auto& ev : plan->events)
    for (const Move& m : ev) (m.kind == MoveKind::kPrefetch ? s.prefetches : s.evictions) += 1;
}

namespace {

// One run of the planner's pipeline from the windows to a checked plan: selection (seeded with
// `held_objects`, see select_windows), late-prefetch fixing, the plan, budget and stall repair, and the
// all-slow guard. `model` is the plan's replay on the cost model.
struct Candidate {
  std::vector<Window> win;
  Plan plan;
  SimResult model;
  RepairStats repair;
  plan_detail::StallRepairStats stall_fix;
  std::string notes;
};

// The fault repair (fault_repair.h) of one start, with its note. Every start is repaired before the starts
// are compared, so the plan kept is never worse than a start alone.
void repair_faults_noted(const ProfileIndex& index, const MemorySystem& mem, const PlannerConfig& cfg, uint64_t budget,
                         Plan* plan, std::string* notes) {
  plan_detail::FaultRepairStats fault_fix;
  plan_detail::repair_faults(index, mem, budget, cfg.sim_steps, cfg.fault_repair_rounds, plan, &fault_fix);
  if (fault_fix.sent_slow == 0) return;
  char line[200];
  std::snprintf(line, sizeof line, "fault repair sent %u fast births slow (their pages faulted in cost more than "
                "their accesses save; modeled %.3f ms less); ", fault_fix.sent_slow, fault_fix.saved_ns / 1e6);
  *notes += line;
}

bool plan_candidate(const ProfileIndex& index, const MemorySystem& mem, const PlannerConfig& cfg, uint64_t budget,
                    const std::vector<Window>& windows, const std::vector<uint32_t>& held_objects,
                    const SimResult& all_slow, Candidate* c, std::string* error) {
  const uint32_t P = index.period();
  c->win = windows;
  OccupancyTree tree(P);
  select_windows(index, mem, cfg, budget, &c->win, &tree, held_objects);
  fix_late_prefetches(index, mem, cfg, budget, &c->win, &tree);
  std::vector<int64_t> move_window;
  c->plan = build_plan(index, c->win, &move_window);
  if (!enforce_budget(index, mem, budget, &c->plan, &c->repair, error)) return false;
  plan_detail::repair_stalls(index, mem, budget, cfg.sim_steps, cfg.stall_repair_attempts, &c->plan, &c->stall_fix);
  repair_faults_noted(index, mem, cfg, budget, &c->plan, &c->notes);

  // Never worse than leaving everything slow: drop windows whose prefetches stay late if the model
  // says the plan loses to all-slow (dropping migrations never makes another one later).
  SimOptions model;
  model.steps = cfg.sim_steps;
  model.record_moves = true;
  model.pool_bytes = budget;  // the runtime's fast pool: births that find no parked pages fault theirs in
  SimResult& rp = c->model;
  simulate_plan(index, c->plan, mem, model, &rp, nullptr);
  if (rp.step_ns > all_slow.step_ns) {
    std::vector<FastInterval> iv = fast_intervals(index, c->plan, mem, {});
    std::vector<FastInterval> late;
    for (const FastInterval& f : iv)
      if (f.start_move >= 0 && rp.move_stall_ns[f.start_move] > 0) late.push_back(f);
    drop_intervals(index, late, &c->plan);
    simulate_plan(index, c->plan, mem, model, &rp, nullptr);
    if (rp.step_ns > all_slow.step_ns) {
      for (auto& e : c->plan.events) e.clear();
      for (auto& [tag, tier] : c->plan.birth_tier) tier = Tier::kSlow;
      rp = all_slow;
      c->notes += "fell back to all-slow: migrations could not be made in time; ";
    } else {
      c->notes += "dropped " + std::to_string(late.size()) + " windows with late prefetches; ";
    }
  }
  return true;
}

}  // namespace

bool plan_sentinel(const ProfileIndex& index, const MemorySystem& mem, const PlannerConfig& cfg,
                   Plan* out, std::string* error) {
  if (!validate_memory_system(mem, error)) return false;
  if (cfg.gap_slack <= 0 || cfg.prefetch_slack <= 0 || cfg.short_reserve_max_share < 0 ||
      cfg.short_reserve_max_share > 1) {
    if (error != nullptr) *error = "planner config: slack factors must be > 0, "
                                   "short_reserve_max_share in [0, 1]";
    return false;
  }
  const uint32_t P = index.period();
  const uint64_t budget = resolve_budget(cfg, index);
  const std::vector<Window> windows = plan_detail::build_windows(index, mem, cfg);
  Plan slow;
  slow.period = P;
  slow.events.assign(P, {});
  SimResult rs;
  SimOptions model;
  model.steps = cfg.sim_steps;
  model.record_moves = true;
  model.pool_bytes = budget;
  simulate_plan(index, slow, mem, model, &rs, nullptr);

  Candidate best;
  if (!plan_candidate(index, mem, cfg, budget, windows, {}, rs, &best, error)) return false;
  // Sentinel's own best static placement (baselines.h, static-best) as a second start: its objects
  // held fast, the moves chosen around them. The greedy by density alone can spend the budget on
  // windows that leave a worse static set than static-best's whole-lifetime choice; seeded, the
  // selection keeps that set where it pays and adds the moves that fit beside it.
  Plan fixed;
  std::string ignored;
  const bool have_fixed = make_plan(Policy::kStaticBest, index, mem, cfg, &fixed, &ignored);
  if (have_fixed && cfg.seed_with_static_best) {
    std::vector<uint32_t> held;
    for (uint32_t i = 0; i < index.objects().size(); ++i) {
      auto it = fixed.birth_tier.find(index.object(i).tag);
      if (it != fixed.birth_tier.end() && it->second == Tier::kFast) held.push_back(i);
    }
    Candidate seeded;
    if (!held.empty() && plan_candidate(index, mem, cfg, budget, windows, held, rs, &seeded, error) &&
        seeded.model.step_ns < best.model.step_ns * (1 - 1e-9)) {
      char line[160];
      std::snprintf(line, sizeof line, "started from the best static placement (modeled %.3f ms against %.3f ms); ",
                    seeded.model.step_ns / 1e6, best.model.step_ns / 1e6);
      seeded.notes += line;
      best = std::move(seeded);
    }
  }
  Plan plan = std::move(best.plan);
  SimResult rp = best.model;
  std::string notes = std::move(best.notes);
  const std::vector<Window>& win = best.win;
  const RepairStats& repair = best.repair;
  const plan_detail::StallRepairStats& stall_fix = best.stall_fix;
  // A whole-step placement, fault-repaired, replaces the plan when the model says it is faster.
  auto keep_if_faster = [&](Plan* alt, const char* what, const char* over) {
    std::string alt_notes;
    repair_faults_noted(index, mem, cfg, budget, alt, &alt_notes);
    SimResult ra;
    if (!simulate_plan(index, *alt, mem, model, &ra, nullptr) || ra.step_ns >= rp.step_ns * (1 - 1e-9)) return;
    char line[160];
    std::snprintf(line, sizeof line, "kept %s (modeled %.3f ms) over %s (%.3f ms); ", what, ra.step_ns / 1e6, over,
                  rp.step_ns / 1e6);
    notes += line;
    notes += alt_notes;
    plan.birth_tier = std::move(alt->birth_tier);
    for (auto& e : plan.events) e.clear();
    rp = ra;
  };
  // Never worse than Sentinel's own best static placement (baselines.h, static-best): the windows are
  // chosen greedily by density, and where no move pays (a slow channel, streamed traffic) the greedy
  // can leave a worse static set than static-best's whole-lifetime choice. Same model, same budget.
  if (have_fixed) keep_if_faster(&fixed, "the best static placement", "the windows' plan");
  // Nor worse than the other static placements. Under the fast pool's faults (cost_model.h) a placement that
  // fills the budget in allocation order can beat the one chosen by access density: its fast births are the
  // same objects every step and find their parked extents (efficientnet_b0, batch 32, 224 px, 10 % on optane:
  // first-touch 1.146x, Sentinel's plan 1.155x).
  if (cfg.compare_static_baselines) {
    for (const Policy other : {Policy::kFirstTouch, Policy::kStaticRatio}) {
      Plan alt;
      if (!make_plan(other, index, mem, cfg, &alt, &ignored)) continue;
      const std::string what = std::string("the ") + policy_name(other) + " placement";
      keep_if_faster(&alt, what.c_str(), "the plan");
    }
  }
  if (stall_fix.merged + stall_fix.dropped > 0)
    notes += "stall repair kept " + std::to_string(stall_fix.merged) + " objects fast through a gap and dropped " +
             std::to_string(stall_fix.dropped) + " late windows; ";
  if (repair.dropped_intervals > 0)
    notes += "budget repair dropped " + std::to_string(repair.dropped_intervals) + " windows; ";

  // Budget adequacy: the objects the policy must keep fast but cannot.
  uint64_t largest_hot = 0;
  uint32_t too_big = 0;
  for (const ObjectView& o : index.objects()) {
    if (o.total_accesses > 0 && o.size > budget) {
      ++too_big;
      largest_hot = std::max(largest_hot, o.size);
    }
  }
  uint32_t short_unplaced = 0;
  for (const Window& w : win)
    if (w.short_lived && !w.selected && index.object(w.obj).total_accesses > 0) ++short_unplaced;
  bool insufficient = budget == 0 || too_big > 0 || short_unplaced > 0;
  std::string msg;
  if (budget == 0) msg += "budget is 0: everything stays on the slow tier; ";
  if (too_big > 0)
    msg += std::to_string(too_big) + " accessed objects are larger than the budget (" +
           human_bytes(budget) + "; largest " + human_bytes(largest_hot) + "), they stay slow; ";
  if (short_unplaced > 0)
    msg += std::to_string(short_unplaced) +
           " short-lived objects do not fit the reserved share of the budget and live on the slow tier; ";
  plan.summary = PlanSummary{};
  fill_summary(index, mem, budget, &plan);
  plan.summary.budget_insufficient = insufficient;
  plan.summary.message = msg + notes;
  if (!plan.summary.message.empty() && plan.summary.message.size() >= 2)
    plan.summary.message.resize(plan.summary.message.size() - 2);
  *out = std::move(plan);
  return true;
}

}  // namespace sentinel
