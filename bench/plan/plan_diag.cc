// plan_diag: why a policy's plan is slower than all-DRAM on one profile. Prints, for a policy
// (default sentinel) at a budget and tier model, the per-phase slow-access extra time and
// migration stalls next to the per-phase optimistic lower bound (lower_bound.h), the fast-memory
// residency per phase at measured durations against the budget, and the objects whose slow accesses
// cost the most. Diagnostic tool; times are modeled (cost_model.h).
//
// Usage: plan_diag PROFILE [BUDGET=20%] [TIER=cxl] [POLICY=sentinel] [all]
// ("all" prints every phase instead of the 15 with the largest loss over the bound). Planner knobs
// for experiments come from the environment: PD_SHORT, PD_MCF, PD_GAP, PD_SLACK, PD_LOOK, PD_SLP,
// PD_MERGE, PD_PREFIX, PD_STALL; PD_OBJ=i prints the candidate windows of object i.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "plan/baselines.h"
#include "plan/cost_model.h"
#include "plan/lower_bound.h"
#include "plan/planner_windows.h"
#include "plan/replay.h"
#include "profile/profile_io.h"

using namespace sentinel;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: plan_diag PROFILE [BUDGET] [TIER] [POLICY] [all]\n");
    return 2;
  }
  std::string budget_s = argc > 2 ? argv[2] : "20%", tier = argc > 3 ? argv[3] : "cxl";
  std::string pol = argc > 4 ? argv[4] : "sentinel";
  bool all_phases = argc > 5 && std::string(argv[5]) == "all";
  StepProfile prof;
  std::string err;
  if (!read_profile_file(argv[1], &prof, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 1; }
  ProfileIndex index;
  if (!index.build(prof, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 1; }
  MemorySystem mem;
  PlannerConfig cfg;
  Policy policy;
  if (!resolve_memory_system(tier, &mem, &err) || !parse_budget(budget_s, &cfg, &err) ||
      !parse_policy(pol, &policy)) {
    std::fprintf(stderr, "bad arguments %s\n", err.c_str());
    return 1;
  }
  // Experiment knobs (environment): PD_SHORT, PD_MCF, PD_GAP, PD_SLACK, PD_LOOK, PD_SLP.
  if (const char* v = std::getenv("PD_SHORT")) cfg.short_reserve_max_share = std::atof(v);
  if (const char* v = std::getenv("PD_MCF")) cfg.migration_cost_factor = std::atof(v);
  if (const char* v = std::getenv("PD_GAP")) cfg.gap_slack = std::atof(v);
  if (const char* v = std::getenv("PD_SLACK")) cfg.prefetch_slack = std::atof(v);
  if (const char* v = std::getenv("PD_LOOK")) cfg.lookahead_phases = std::atoi(v);
  if (const char* v = std::getenv("PD_SLP")) cfg.short_lived_phases = std::atoi(v);
  if (const char* v = std::getenv("PD_MERGE")) cfg.merged_windows = std::atoi(v);
  if (const char* v = std::getenv("PD_PREFIX")) cfg.prefix_alternatives = std::atoi(v);
  if (const char* v = std::getenv("PD_STALL")) cfg.stall_repair_attempts = std::atoi(v);
  const uint64_t budget = resolve_budget(cfg, index);
  Plan plan;
  if (!make_plan(policy, index, mem, cfg, &plan, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 1; }
  SimOptions so;
  so.record_phases = true;
  so.record_moves = true;
  SimResult r;
  simulate_plan(index, plan, mem, so, &r, &err);
  SimOptions meas;
  meas.slow_penalty = false;
  meas.stalls = false;
  SimResult rm;
  simulate_plan(index, plan, mem, meas, &rm, &err);
  LowerBound lb;
  lower_bound(index, mem, budget, &lb);
  const uint32_t P = index.period();
  const double base = static_cast<double>(index.step_ns());
  std::printf("%s %s budget %" PRIu64 " B: step %.4f (extra %.4f stall %.4f)  lower bound %.4f "
              "(objects split: %.4f)\n", pol.c_str(), mem.name.c_str(), budget, r.step_ns / base,
              r.slow_extra_ns / base, r.stall_ns / base, lb.step_ns / base, lb.fractional_ns / base);
  std::printf("summary: %s\n", plan.summary.message.c_str());
  for (double target : {1.03, 1.05}) {
    const uint64_t need = min_budget_for_ratio(index, mem, target);
    std::printf("lower bound: no policy reaches %.2f x all-DRAM below %.1f MiB (%.1f %% of the peak)\n",
                target, need / 1048576.0, 100.0 * need / index.peak_bytes());
  }
  const double lat = (mem.slow.latency_ns - mem.fast.latency_ns) / mem.mlp;
  // Per-object attribution of the extra time: a phase's extra split by the objects' share of the
  // dominant term (latency: reads; otherwise bandwidth bytes).
  std::map<uint32_t, double> obj_cost;
  struct Row { uint32_t k; double loss; };
  std::vector<Row> rows;
  for (uint32_t k = 0; k < P; ++k) {
    double tot = 0;
    std::vector<std::pair<uint32_t, double>> part;
    for (uint32_t i : r.phase_slow_objects[k]) {
      for (const PhaseAccessRef& a : index.accesses_in(k)) {
        if (a.obj != i) continue;
        double w = a.reads * lat + a.writes * mem.access_bytes / mem.slow.write_bw_gbps;
        part.push_back({i, w});
        tot += w;
      }
    }
    for (auto& [i, w] : part) obj_cost[i] += tot > 0 ? r.phase_extra_ns[k] * w / tot : 0;
    rows.push_back({k, r.phase_extra_ns[k] + r.phase_stall_ns[k] - lb.phase_extra_ns[k]});
  }
  if (!all_phases) {
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.loss > b.loss; });
    rows.resize(std::min<size_t>(rows.size(), 15));
  }
  std::printf("phase  dur_us   extra_us stall_us  lb_us  resid_MiB live_MiB  accessed_MiB  slow_objs\n");
  for (const Row& row : rows) {
    uint32_t k = row.k;
    uint64_t accessed = 0;
    for (const PhaseAccessRef& a : index.accesses_in(k)) accessed += index.object(a.obj).size;
    std::printf("%5u %8.1f %9.1f %8.1f %7.1f %9.2f %8.2f %9.2f   %zu\n", k, index.duration(k) / 1e3,
                r.phase_extra_ns[k] / 1e3, r.phase_stall_ns[k] / 1e3, lb.phase_extra_ns[k] / 1e3,
                rm.residency[k] / 1048576.0, index.live_bytes(k) / 1048576.0, accessed / 1048576.0,
                r.phase_slow_objects[k].size());
  }
  {
    std::vector<uint32_t> off = move_offsets(plan);
    for (uint32_t k = 0; k < P; ++k)
      for (size_t m = 0; m < plan.events[k].size(); ++m)
        if (r.move_stall_ns[off[k] + m] > 0)
          std::printf("stall %.1f us: prefetch of obj %" PRId64 " (%.2f MiB) issued at event %u\n",
                      r.move_stall_ns[off[k] + m] / 1e3, index.find(plan.events[k][m].tag),
                      index.object(index.find(plan.events[k][m].tag)).size / 1048576.0, k);
  }
  if (const char* v = std::getenv("PD_OBJ")) {  // candidate windows of one object
    const uint32_t want = static_cast<uint32_t>(std::atoi(v));
    for (const plan_detail::Window& w : plan_detail::build_windows(index, mem, cfg)) {
      if (w.obj != want) continue;
      std::printf("window obj %u start %lld lo %lld uses %lld..%lld occ_end %lld born_fast %d always %d "
                  "evict %d value %.1f us benefit %.1f density %.3g\n", w.obj, (long long)w.start,
                  (long long)w.lo, (long long)w.first_use, (long long)w.last_use, (long long)w.occ_end,
                  w.born_fast, w.always, w.evict, w.access_value / 1e3, w.benefit / 1e3,
                  w.density);
    }
  }
  std::vector<std::pair<double, uint32_t>> top;
  for (auto& [i, c] : obj_cost) top.push_back({c, i});
  std::sort(top.rbegin(), top.rend());
  std::printf("objects by slow-access cost (us):\n");
  for (size_t j = 0; j < std::min<size_t>(top.size(), 15); ++j) {
    const ObjectView& o = index.object(top[j].second);
    std::string moves;
    for (uint32_t k = 0; k < P; ++k)
      for (const Move& m : plan.events[k])
        if (m.tag == o.tag) moves += (m.kind == MoveKind::kPrefetch ? " P@" : " E@") + std::to_string(k);
    std::string uses;
    for (const AccessView& a : o.accesses)
      uses += " " + std::to_string(index.offset_of(o, 0) == 0 && o.cyclic ? a.offset : (o.birth + a.offset) % P);
    std::printf("  %9.1f obj %u size %.2f MiB birth %u life %u %s born %s moves:%s uses:%s\n",
                top[j].first / 1e3, top[j].second, o.size / 1048576.0, o.birth, o.life,
                o.cyclic ? "persistent" : "", tier_name(plan.birth(o.tag)), moves.c_str(), uses.c_str());
  }
  return 0;
}
