#include "plan/discrete_model.h"

#include <algorithm>

namespace sentinel {
namespace {

uint32_t cell_phase(const ProfileIndex& index, const ObjectView& o, uint32_t t) {
  return (o.birth + t) % index.period();
}

struct Effective {
  uint32_t obj, cell;
  MoveKind kind;
};

}  // namespace

double discrete_margin_ns(const ProfileIndex& index) {
  return std::max(100.0, 1e-4 * static_cast<double>(index.step_ns()));
}

uint32_t discrete_cells(const ProfileIndex& index, const ObjectView& o) {
  return o.cyclic ? index.period() : o.life;
}

uint64_t cell_time(const ProfileIndex& index, const ObjectView& o, uint32_t t, uint32_t t2) {
  const uint64_t from = cell_phase(index, o, t);
  return index.time_between(from, from + (t2 - t));
}

int64_t next_access_cell(const ProfileIndex& index, const ObjectView& o, uint32_t t) {
  auto it = std::lower_bound(o.accesses.begin(), o.accesses.end(), t,
                             [](const AccessView& a, uint32_t v) { return a.offset < v; });
  if (it != o.accesses.end()) return it->offset;
  if (o.cyclic && !o.accesses.empty()) return static_cast<int64_t>(o.accesses.front().offset) + index.period();
  return -1;
}

bool evaluate_discrete(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, const Plan& plan,
                       DiscreteEval* out, std::string* error) {
  const uint32_t P = index.period();
  if (plan.period != P || plan.events.size() != P) {
    if (error != nullptr) *error = "plan period does not match the profile";
    return false;
  }
  const auto& objs = index.objects();
  DiscreteEval ev;
  auto fail = [&](const std::string& why) {
    if (ev.feasible) ev.why = why;
    ev.feasible = false;
  };
  ev.feasible = true;
  // Moves per object per event, in plan order.
  std::vector<std::vector<std::pair<uint32_t, MoveKind>>> moves(objs.size());
  for (uint32_t k = 0; k < P; ++k)
    for (const Move& m : plan.events[k]) {
      const int64_t i = index.find(m.tag);
      if (i < 0) {
        if (error != nullptr) *error = "plan moves an unknown tag at event " + std::to_string(k);
        return false;
      }
      moves[i].push_back({k, m.kind});
    }
  ev.state.h.assign(objs.size(), {});
  ev.state.f.assign(objs.size(), {});
  std::vector<Effective> effective;
  std::vector<double> work_pre(P, 0.0), work_ev(P, 0.0);
  for (uint32_t i = 0; i < objs.size(); ++i) {
    const ObjectView& o = objs[i];
    const uint32_t L = discrete_cells(index, o);
    std::vector<uint8_t>& h = ev.state.h[i];
    h.assign(L, 0);
    std::vector<std::vector<MoveKind>> at(P);
    for (const auto& [k, kind] : moves[i]) at[k].push_back(kind);
    bool fast = plan.birth(o.tag) == Tier::kFast;
    for (uint32_t t = 0; t < L; ++t) {
      const uint32_t k = cell_phase(index, o, t);
      uint32_t changes = 0;
      for (MoveKind kind : at[k]) {
        const bool want = kind == MoveKind::kPrefetch;
        if (want == fast) continue;  // no-op in the cost model
        fast = want;
        ++changes;
        effective.push_back({i, t, kind});
        (want ? work_pre : work_ev)[k] += mem.migration_ns(static_cast<double>(o.size));
      }
      if (changes > 1) fail("several migrations of one object at event " + std::to_string(k));
      if (changes > 0 && t == 0 && !o.cyclic) fail("migration at the birth event " + std::to_string(k));
      h[t] = fast ? 1 : 0;
    }
    if (o.cyclic && L > 0 && (h[L - 1] != 0) != (plan.birth(o.tag) == Tier::kFast))
      fail("a persistent object ends the step on another tier than it starts");
  }
  // Least periodic backlog of the FIFO channel at measured durations: after the prefetches of each
  // event (qpre) and after its evictions (q).
  std::vector<double> qpre(P, 0.0), q(P, 0.0);
  const double qmax = static_cast<double>(index.step_ns());
  bool converged = P == 0;
  double carry = 0;
  for (int cycle = 0; cycle < 4 && !converged; ++cycle) {
    const double before = carry;
    for (uint32_t k = 0; k < P; ++k) {
      const double prev = (k == 0 ? carry : q[k - 1]) - static_cast<double>(index.duration((k + P - 1) % P));
      qpre[k] = std::max(work_pre[k], prev + work_pre[k]);
      q[k] = qpre[k] + work_ev[k];
    }
    carry = q[P - 1];
    converged = cycle > 0 && carry == before;
  }
  for (uint32_t k = 0; k < P; ++k)
    if (!converged || q[k] > qmax) {
      fail("the migration channel is overloaded (backlog above one step)");
      break;
    }
  const double margin = discrete_margin_ns(index);
  for (uint32_t i = 0; i < objs.size(); ++i) ev.state.f[i] = ev.state.h[i];
  for (const Effective& e : effective) {
    const ObjectView& o = objs[e.obj];
    const uint32_t k = cell_phase(index, o, e.cell);
    const double backlog = (e.kind == MoveKind::kPrefetch ? qpre[k] : q[k]) + margin;
    if (e.kind == MoveKind::kPrefetch) {
      const int64_t use = next_access_cell(index, o, e.cell);
      if (use < 0) fail("a prefetch is never followed by a use");
      else if (backlog > static_cast<double>(cell_time(index, o, e.cell, static_cast<uint32_t>(use)))) {
        ev.late.push_back({e.obj, e.cell});
        fail("a prefetch completes after the next use (phase " +
             std::to_string(cell_phase(index, o, static_cast<uint32_t>(use))) + ")");
      }
    } else {
      const uint32_t L = discrete_cells(index, o);
      const uint32_t end = o.cyclic ? e.cell + L : L;
      for (uint32_t t2 = e.cell; t2 < end; ++t2) {
        if (backlog <= static_cast<double>(cell_time(index, o, e.cell, t2))) break;
        ev.state.f[e.obj][t2 % L] = 1;
      }
    }
  }
  const double lat_delta = mem.latency_delta_ns();
  double total = 0;
  std::vector<uint64_t> resident(P, 0);
  for (uint32_t i = 0; i < objs.size(); ++i)
    for (uint32_t t = 0; t < ev.state.f[i].size(); ++t)
      if (ev.state.f[i][t]) resident[cell_phase(index, objs[i], t)] += objs[i].size;
  for (uint32_t k = 0; k < P; ++k) {
    ev.peak_bytes = std::max(ev.peak_bytes, resident[k]);
    if (resident[k] > budget) {
      ev.over_budget_phases.push_back(k);
      fail("over budget in phase " + std::to_string(k));
    }
    double reads = 0, writes = 0;
    for (const PhaseAccessRef& a : index.accesses_in(k)) {
      const ObjectView& o = objs[a.obj];
      if (ev.state.h[a.obj][index.offset_of(o, k)]) continue;
      reads += static_cast<double>(a.reads);
      writes += static_cast<double>(a.writes);
    }
    const double d = static_cast<double>(index.duration(k));
    const double lat = reads * lat_delta;
    const double bw = reads * mem.access_bytes / mem.slow.read_bw_gbps +
                      writes * mem.access_bytes / mem.slow.write_bw_gbps - d;
    total += d + std::max(0.0, std::max(lat, bw));
  }
  ev.step_ns = total;
  *out = std::move(ev);
  return true;
}

namespace {

// Clears the run of 1s of h around cell t (cyclic objects wrap); with t on a 0 (an eviction still
// copying), the run before it.
void drop_run(std::vector<uint8_t>* h, uint32_t t, bool cyclic) {
  const uint32_t L = static_cast<uint32_t>(h->size());
  auto step_back = [&](uint32_t c) -> int64_t {
    if (c > 0) return static_cast<int64_t>(c) - 1;
    return cyclic ? static_cast<int64_t>(L) - 1 : -1;
  };
  int64_t c = t;
  for (uint32_t n = 0; c >= 0 && (*h)[c] == 0 && n < L; ++n) c = step_back(static_cast<uint32_t>(c));
  if (c < 0 || (*h)[c] == 0) return;
  const uint32_t at = static_cast<uint32_t>(c);
  for (uint32_t n = 0, x = at; n < L && (*h)[x]; ++n, x = cyclic ? (x + 1) % L : x + 1) {
    (*h)[x] = 0;
    if (!cyclic && x + 1 >= L) break;
  }
  for (int64_t x = step_back(at); x >= 0 && (*h)[x]; x = step_back(static_cast<uint32_t>(x))) (*h)[x] = 0;
}

}  // namespace

bool make_discrete_feasible(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                            const Plan& plan, DiscreteEval* out, std::string* error) {
  DiscreteEval ev;
  if (!evaluate_discrete(index, mem, budget, plan, &ev, error)) return false;
  const auto& objs = index.objects();
  std::vector<std::vector<uint8_t>> h = ev.state.h;
  for (size_t round = 0; round <= 4 * objs.size() * index.period() + 1; ++round) {
    if (!evaluate_discrete(index, mem, budget, plan_from_discrete(index, h, plan.policy), &ev, error)) return false;
    if (ev.feasible) break;
    if (!ev.late.empty()) {
      for (const auto& [i, cell] : ev.late)
        if (h[i][cell]) drop_run(&h[i], cell, objs[i].cyclic);  // else dropped with an earlier one
    } else if (!ev.over_budget_phases.empty()) {
      std::vector<uint8_t> touched(objs.size(), 0);  // one run per object and round: f is stale after
      for (uint32_t k : ev.over_budget_phases) {
        int64_t pick = -1;
        for (uint32_t i = 0; i < objs.size(); ++i)
          if (index.alive_at(objs[i], k) && ev.state.f[i][index.offset_of(objs[i], k)] &&
              (pick < 0 || objs[i].size > objs[pick].size))
            pick = i;
        if (pick < 0 || touched[pick]) continue;
        touched[pick] = 1;
        drop_run(&h[pick], index.offset_of(objs[pick], k), objs[pick].cyclic);
      }
    } else {
      break;
    }
  }
  if (!ev.feasible) {  // all-slow is always feasible
    for (auto& x : h) std::fill(x.begin(), x.end(), 0);
    if (!evaluate_discrete(index, mem, budget, plan_from_discrete(index, h, plan.policy), &ev, error)) return false;
  }
  *out = std::move(ev);
  return true;
}

Plan plan_from_discrete(const ProfileIndex& index, const std::vector<std::vector<uint8_t>>& h,
                        const std::string& policy) {
  const uint32_t P = index.period();
  Plan plan;
  plan.policy = policy;
  plan.period = P;
  plan.events.assign(P, {});
  struct Item { uint64_t deadline; Move move; };
  std::vector<std::vector<Item>> pre(P), evict(P);
  const auto& objs = index.objects();
  for (uint32_t i = 0; i < objs.size(); ++i) {
    const ObjectView& o = objs[i];
    const std::vector<uint8_t>* hi = i < h.size() ? &h[i] : nullptr;
    const uint32_t L = discrete_cells(index, o);
    if (hi == nullptr || hi->size() != L || L == 0) {
      plan.birth_tier[o.tag] = Tier::kSlow;
      continue;
    }
    plan.birth_tier[o.tag] = (o.cyclic ? (*hi)[L - 1] : (*hi)[0]) ? Tier::kFast : Tier::kSlow;
    for (uint32_t t = o.cyclic ? 0 : 1; t < L; ++t) {
      const uint8_t prev = (*hi)[(t + L - 1) % L], cur = (*hi)[t];
      if (prev == cur) continue;
      const uint32_t k = cell_phase(index, o, t);
      if (cur) {
        const int64_t use = next_access_cell(index, o, t);
        const uint64_t deadline = use < 0 ? UINT64_MAX : cell_time(index, o, t, static_cast<uint32_t>(use));
        pre[k].push_back({deadline, Move{o.tag, MoveKind::kPrefetch}});
      } else {
        evict[k].push_back({0, Move{o.tag, MoveKind::kEvict}});
      }
    }
  }
  for (uint32_t k = 0; k < P; ++k) {
    std::stable_sort(pre[k].begin(), pre[k].end(),
                     [](const Item& a, const Item& b) { return a.deadline < b.deadline; });
    for (const Item& it : pre[k]) plan.events[k].push_back(it.move);
    for (const Item& it : evict[k]) plan.events[k].push_back(it.move);
  }
  return plan;
}

}  // namespace sentinel
