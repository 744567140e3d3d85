#include "plan/reactive_hot.h"

#include <algorithm>
#include <deque>
#include <set>

namespace sentinel {
namespace {

struct State {
  bool alive = false;
  Tier target = Tier::kSlow;
  bool counted = false;  // occupies fast memory (fast, or an eviction still copying)
  double job_done = 0;
  uint64_t seq = 0;
  double last_access = -1;
};

}  // namespace

Plan reactive_hot_plan(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                       const ReactiveConfig& cfg) {
  const uint32_t P = index.period();
  const auto& objs = index.objects();
  Plan plan;
  plan.policy = policy_name(Policy::kReactiveHot);
  plan.period = P;
  plan.events.assign(P, {});
  const double rate = cfg.promote_rate_gbps > 0 ? cfg.promote_rate_gbps : mem.migration_bw_gbps;
  uint64_t largest = 0;
  for (const ObjectView& o : objs) largest = std::max(largest, o.size);
  // Bucket depth: one largest object or a millisecond of promotions, whichever is more.
  const double bucket_cap = std::max(static_cast<double>(largest), rate * 1e6);
  double tokens = bucket_cap;

  std::vector<State> st(objs.size());
  std::set<std::pair<double, uint32_t>> lru;  // (last access, obj) of alive fast-target objects
  uint64_t resident = 0, fast_target = 0;
  struct Pending { double done; uint32_t obj; uint64_t seq; };
  std::deque<Pending> evicting;
  double now = 0, channel_free = 0;
  uint64_t seq = 0;

  auto set_fast = [&](uint32_t i) {
    st[i].target = Tier::kFast;
    fast_target += objs[i].size;
    lru.insert({st[i].last_access, i});
  };
  auto leave_fast = [&](uint32_t i) {
    lru.erase({st[i].last_access, i});
    fast_target -= objs[i].size;
  };
  auto migrate = [&](uint32_t i, Tier to, bool record, uint32_t k) {
    const double start = std::max(now, channel_free);
    const double done = start + static_cast<double>(objs[i].size) / mem.migration_bw_gbps;
    channel_free = done;
    st[i].job_done = done;
    st[i].seq = ++seq;
    if (to == Tier::kFast) {
      if (!st[i].counted) resident += objs[i].size;
      st[i].counted = true;
      set_fast(i);
    } else {
      leave_fast(i);
      st[i].target = Tier::kSlow;
      evicting.push_back({done, i, seq});
    }
    if (record) plan.events[k].push_back({objs[i].tag, to == Tier::kFast ? MoveKind::kPrefetch : MoveKind::kEvict});
  };
  auto place_at_birth = [&](uint32_t i) {
    State& s = st[i];
    s = State{};
    s.alive = true;
    if (resident + objs[i].size <= budget) {
      s.counted = true;
      resident += objs[i].size;
      set_fast(i);
    }
  };
  for (uint32_t i = 0; i < objs.size(); ++i)
    if (objs[i].cyclic) place_at_birth(i);

  const uint32_t steps = std::max<uint32_t>(1, cfg.warm_steps);
  for (uint32_t s = 0; s < steps; ++s) {
    const bool record = s + 1 == steps;
    if (record) {
      for (uint32_t i = 0; i < objs.size(); ++i)
        if (objs[i].cyclic) plan.birth_tier[objs[i].tag] = st[i].target;
    }
    for (uint32_t k = 0; k < P; ++k) {
      while (!evicting.empty() && evicting.front().done <= now) {
        const Pending& e = evicting.front();
        State& o = st[e.obj];
        if (o.alive && o.counted && o.target == Tier::kSlow && o.seq == e.seq) {
          o.counted = false;
          resident -= objs[e.obj].size;
        }
        evicting.pop_front();
      }
      for (uint32_t i : index.deaths_at(k)) {
        if (!st[i].alive) continue;
        if (st[i].target == Tier::kFast) leave_fast(i);
        if (st[i].counted) resident -= objs[i].size;
        st[i] = State{};
      }
      for (uint32_t i : index.births_at(k)) {
        place_at_birth(i);
        if (record) plan.birth_tier[objs[i].tag] = st[i].target;
      }
      // Promotions of what was accessed in the previous phase (hint faults seen one phase late).
      const uint32_t prev = (k + P - 1) % P;
      if (s > 0 || k > 0) {
        tokens = std::min(bucket_cap, tokens + rate * static_cast<double>(index.duration(prev)));
        std::vector<std::pair<uint64_t, uint32_t>> cand;
        for (const PhaseAccessRef& a : index.accesses_in(prev)) {
          const State& o = st[a.obj];
          if (o.alive && o.target == Tier::kSlow && o.job_done <= now) cand.push_back({a.reads + a.writes, a.obj});
        }
        std::sort(cand.begin(), cand.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        for (const auto& [count, i] : cand) {
          const uint64_t size = objs[i].size;
          if (size > budget || tokens < static_cast<double>(size)) continue;
          // Demote the least recently used until the fast tier can hold the object once copies end.
          while (fast_target + size > budget && !lru.empty()) {
            uint32_t victim = lru.begin()->second;
            if (st[victim].last_access >= now - static_cast<double>(index.duration(prev))) break;  // all hot
            migrate(victim, Tier::kSlow, record, k);
          }
          if (resident + size > budget) continue;  // room appears when the demotions finish
          tokens -= static_cast<double>(size);
          migrate(i, Tier::kFast, record, k);
        }
      }
      for (const PhaseAccessRef& a : index.accesses_in(k)) {
        State& o = st[a.obj];
        if (!o.alive) continue;
        if (o.target == Tier::kFast) lru.erase({o.last_access, a.obj});
        o.last_access = now;
        if (o.target == Tier::kFast) lru.insert({o.last_access, a.obj});
      }
      now += static_cast<double>(index.duration(k));
    }
  }
  return plan;
}

}  // namespace sentinel
