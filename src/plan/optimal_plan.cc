#include "plan/optimal_plan.h"

#include <cmath>
#include <cstdio>

#include "plan/discrete_model.h"

namespace sentinel {
namespace {

constexpr double kUnit = 1000.0;  // the programme measures time in microseconds

struct ObjCols {
  bool included = false;
  std::vector<int> h, f, u, w, rho;  // per cell; u/w = -1 where no such move exists
};

// A D-feasible state near the plan's (make_discrete_feasible) with the objects left out of the
// programme kept slow (fewer moves on the channel and less occupancy: it stays D-feasible).
bool project(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, const Plan& plan,
             const std::vector<ObjCols>& cols, DiscreteEval* out, std::string* error) {
  DiscreteEval ev;
  if (!make_discrete_feasible(index, mem, budget, plan, &ev, error)) return false;
  for (size_t i = 0; i < cols.size(); ++i)
    if (!cols[i].included) std::fill(ev.state.h[i].begin(), ev.state.h[i].end(), 0);
  return evaluate_discrete(index, mem, budget, plan_from_discrete(index, ev.state.h, plan.policy), out, error);
}

}  // namespace

bool plan_optimal(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                  const OptimalConfig& config, const std::vector<Plan>& starts, OptimalResult* out,
                  std::string* error) {
  const uint32_t P = index.period();
  const auto& objs = index.objects();
  OptimalResult res;
  std::vector<ObjCols> oc(objs.size());
  for (uint32_t i = 0; i < objs.size(); ++i) {
    const ObjectView& o = objs[i];
    oc[i].included = o.total_accesses > 0 && o.size <= budget && budget > 0 && P > 0;
    if (oc[i].included) res.cells += discrete_cells(index, o);
  }
  // The start: the best D-feasible plan offered, or all-slow (always D-feasible).
  std::vector<std::vector<uint8_t>> none(objs.size());
  DiscreteEval best;
  if (!evaluate_discrete(index, mem, budget, plan_from_discrete(index, none, "all-slow"), &best, error))
    return false;
  res.start_policy = "all-slow";
  for (const Plan& s : starts) {
    DiscreteEval ev;
    if (!project(index, mem, budget, s, oc, &ev, error)) return false;
    if (ev.feasible && ev.step_ns < best.step_ns) {
      best = std::move(ev);
      res.start_policy = s.policy;
    }
  }
  res.start_step_ns = best.step_ns;
  res.plan = plan_from_discrete(index, best.state.h, "optimal");
  res.step_ns = best.step_ns;
  if (res.cells > config.max_cells) {
    res.too_large = true;
    res.message = "profile too large for the exact reference: " + std::to_string(res.cells) +
                  " object-phase cells above the limit of " + std::to_string(config.max_cells) +
                  " (--optimal-max-cells); no solve";
    *out = std::move(res);
    return true;
  }
  if (res.cells == 0) {  // nothing to decide: every object stays slow
    res.solved = true;
    res.status = MilpStatus::kOptimal;
    res.bound_ns = res.step_ns;
    res.message = "no object can be fast (none accessed and within the budget)";
    *out = std::move(res);
    return true;
  }

  MilpProblem mp;
  const double qmax = static_cast<double>(index.step_ns());
  const double margin = discrete_margin_ns(index);
  const double R = qmax + margin;
  std::vector<int> qpre(P), q(P), e(P);
  for (uint32_t k = 0; k < P; ++k) {
    qpre[k] = mp.add_col(0, qmax / kUnit, 0, false);
    q[k] = mp.add_col(0, qmax / kUnit, 0, false);
    e[k] = mp.add_col(0, MilpProblem::kInf, 1, false);
  }
  std::vector<std::vector<std::pair<int, double>>> work_pre(P), work_ev(P);  // copy-time terms
  for (uint32_t i = 0; i < objs.size(); ++i) {
    if (!oc[i].included) continue;
    const ObjectView& o = objs[i];
    const uint32_t L = discrete_cells(index, o);
    const double copy = mem.migration_ns(static_cast<double>(o.size));
    ObjCols& c = oc[i];
    c.h.resize(L);
    c.f.resize(L);
    c.rho.resize(L);
    c.u.assign(L, -1);
    c.w.assign(L, -1);
    for (uint32_t t = 0; t < L; ++t) {
      c.h[t] = mp.add_binary();
      c.f[t] = mp.add_binary();
      c.rho[t] = mp.add_col(0, R / kUnit, 0, false);
      mp.add_row({{c.f[t], 1}, {c.h[t], -1}}, 0, MilpProblem::kInf);
      mp.add_row({{c.f[t], 1}, {c.rho[t], -kUnit / R}}, 0, MilpProblem::kInf);
    }
    for (uint32_t t = o.cyclic ? 0 : 1; t < L; ++t) {
      const uint32_t prev = (t + L - 1) % L;
      const uint32_t k = (o.birth + t) % P;
      if (prev == t) continue;  // a persistent object with one cell never moves
      // Prefetch: only where its copy alone can finish before the next use.
      const int64_t use = next_access_cell(index, o, t);
      const double lead =
          use < 0 ? -1 : static_cast<double>(cell_time(index, o, t, static_cast<uint32_t>(use)));
      if (use >= 0 && copy + margin <= lead) {
        c.u[t] = mp.add_col(0, 1, 0, false);
        mp.add_row({{c.u[t], 1}, {c.h[t], -1}, {c.h[prev], 1}}, 0, MilpProblem::kInf);
        mp.add_row({{qpre[k], 1}, {c.u[t], qmax / kUnit}}, -MilpProblem::kInf, (lead - margin + qmax) / kUnit);
        work_pre[k].push_back({c.u[t], copy / kUnit});
      } else {
        mp.add_row({{c.h[t], 1}, {c.h[prev], -1}}, -MilpProblem::kInf, 0);
      }
      // Eviction: occupancy until its copy completes.
      c.w[t] = mp.add_col(0, 1, 0, false);
      mp.add_row({{c.w[t], 1}, {c.h[prev], -1}, {c.h[t], 1}}, 0, MilpProblem::kInf);
      mp.add_row({{c.rho[t], 1}, {q[k], -1}, {c.w[t], -R / kUnit}}, (margin - R) / kUnit, MilpProblem::kInf);
      work_ev[k].push_back({c.w[t], copy / kUnit});
      const uint32_t end = o.cyclic ? t + L : L;
      for (uint32_t t2 = t; t2 < end && copy + margin > static_cast<double>(cell_time(index, o, t, t2)); ++t2)
        mp.add_row({{c.f[t2 % L], 1}, {c.w[t], -1}}, 0, MilpProblem::kInf);
    }
    for (uint32_t t = o.cyclic ? 0 : 1; t < L; ++t) {
      const uint32_t prev = (t + L - 1) % L;
      if (prev == t) continue;
      const double d_prev = static_cast<double>(index.duration((o.birth + prev) % P));
      mp.add_row({{c.rho[t], 1}, {c.rho[prev], -1}}, -d_prev / kUnit, MilpProblem::kInf);
    }
  }
  // The FIFO channel: prefetches of an event first, then its evictions.
  for (uint32_t k = 0; k < P; ++k) {
    std::vector<std::pair<int, double>> row{{qpre[k], 1}};
    for (const auto& [col, cost] : work_pre[k]) row.push_back({col, -cost});
    mp.add_row(row, 0, MilpProblem::kInf);
    const uint32_t pk = (k + P - 1) % P;
    row.push_back({q[pk], -1});
    mp.add_row(row, -static_cast<double>(index.duration(pk)) / kUnit, MilpProblem::kInf);
    std::vector<std::pair<int, double>> after{{q[k], 1}, {qpre[k], -1}};
    for (const auto& [col, cost] : work_ev[k]) after.push_back({col, -cost});
    mp.add_row(after, 0, MilpProblem::kInf);
  }
  // Budget and the cost of every phase.
  const double lat_delta = mem.latency_delta_ns();
  for (uint32_t k = 0; k < P; ++k) {
    std::vector<std::pair<int, double>> cap;
    for (uint32_t i = 0; i < objs.size(); ++i)
      if (oc[i].included && index.alive_at(objs[i], k))
        cap.push_back({oc[i].f[index.offset_of(objs[i], k)], static_cast<double>(objs[i].size) / budget});
    if (!cap.empty()) mp.add_row(cap, -MilpProblem::kInf, 1);
    std::vector<std::pair<int, double>> lat{{e[k], 1}}, bw{{e[k], 1}};
    double lat_all = 0, bw_all = 0;
    for (const PhaseAccessRef& a : index.accesses_in(k)) {
      const double l = static_cast<double>(a.reads) * lat_delta;
      const double b = static_cast<double>(a.reads) * mem.access_bytes / mem.slow.read_bw_gbps +
                       static_cast<double>(a.writes) * mem.access_bytes / mem.slow.write_bw_gbps;
      lat_all += l;
      bw_all += b;
      if (!oc[a.obj].included) continue;
      const int h = oc[a.obj].h[index.offset_of(objs[a.obj], k)];
      lat.push_back({h, l / kUnit});
      bw.push_back({h, b / kUnit});
    }
    if (lat_all > 0) mp.add_row(lat, lat_all / kUnit, MilpProblem::kInf);
    if (bw_all > 0) mp.add_row(bw, (bw_all - static_cast<double>(index.duration(k))) / kUnit, MilpProblem::kInf);
  }
  res.columns = mp.cols();
  res.rows = mp.rows.size();

  MilpOptions mo;
  mo.time_limit_s = config.time_limit_s;
  mo.start.assign(mp.cols(), 0.0);
  for (uint32_t i = 0; i < objs.size(); ++i) {
    if (!oc[i].included) continue;
    for (size_t t = 0; t < oc[i].h.size(); ++t) {
      mo.start[oc[i].h[t]] = best.state.h[i][t];
      mo.start[oc[i].f[t]] = best.state.f[i][t];
    }
  }
  MilpResult mr = solve_milp(mp, mo);
  if (mr.status == MilpStatus::kInfeasible) {
    // All-slow satisfies every row, so a claim of infeasibility is the solver's numerical failure.
    mr.status = MilpStatus::kError;
    mr.message = "CBC declared the programme infeasible although all-slow is feasible: numerical trouble";
  }
  res.status = mr.status;
  res.seconds = mr.seconds;
  res.solver = mr.solver;
  const double base = static_cast<double>(index.step_ns());
  const bool searched = mr.status == MilpStatus::kOptimal || mr.status == MilpStatus::kFeasible ||
                        mr.status == MilpStatus::kNoSolution;  // else the solver's bound means nothing
  if (searched && std::isfinite(mr.bound) && mr.bound > -1e30 && mr.bound < 1e30) res.bound_ns = base + std::max(0.0, mr.bound) * kUnit;
  if (mr.status == MilpStatus::kOptimal || mr.status == MilpStatus::kFeasible) {
    std::vector<std::vector<uint8_t>> h(objs.size());
    for (uint32_t i = 0; i < objs.size(); ++i) {
      if (!oc[i].included) continue;
      h[i].resize(oc[i].h.size());
      for (size_t t = 0; t < h[i].size(); ++t) h[i][t] = mr.values[oc[i].h[t]] > 0.5 ? 1 : 0;
    }
    Plan plan = plan_from_discrete(index, h, "optimal");
    DiscreteEval check;
    if (!evaluate_discrete(index, mem, budget, plan, &check, error)) return false;
    if (!check.feasible) {
      res.message = "the solver's plan fails the exact check of the discretised model (" + check.why +
                    "); kept the start plan (" + res.start_policy + ")";
      res.status = MilpStatus::kError;
    } else if (check.step_ns <= res.step_ns) {
      res.plan = std::move(plan);
      res.step_ns = check.step_ns;
      res.solved = true;
    } else {
      // Within the solver's tolerances the start was as good; keep the better of the two.
      res.solved = true;
    }
  } else {
    res.message = std::string("solver: ") + milp_status_name(mr.status) +
                  (mr.message.empty() ? "" : " (" + mr.message + ")") + "; kept the start plan (" +
                  res.start_policy + ")";
  }
  if (res.status == MilpStatus::kOptimal) {
    res.bound_ns = std::min(res.bound_ns, res.step_ns);
    res.gap = 0;
  } else if (res.step_ns > 0 && res.bound_ns > 0) {
    res.bound_ns = std::min(res.bound_ns, res.step_ns);  // within the solver's tolerances
    res.gap = (res.step_ns - res.bound_ns) / res.step_ns;
  }
  res.plan.policy = "optimal";
  *out = std::move(res);
  return true;
}

}  // namespace sentinel
