#include "plan/cost_model.h"

#include <algorithm>
#include <deque>

#include "plan/fast_pool_model.h"

namespace sentinel {
namespace {

struct CompiledMove {
  uint32_t obj;
  MoveKind kind;
  uint32_t id;  // flattened move index
};

struct ObjState {
  bool alive = false;
  bool counted = false;     // occupies fast memory now
  bool stall_open = false;  // a prefetch in flight that has not yet been charged as late
  Tier target = Tier::kSlow;
  double job_done = 0;      // completion time of the last migration of this object
  uint64_t job_seq = 0;
  uint32_t last_move = 0;
  FastPoolModel::Extent held;  // its extent in the fast pool while counted fast (with a pool)
};

struct PendingEvict {
  double done;
  uint32_t obj;
  uint64_t seq;
  uint64_t issued_phase;  // global phase index (step * period + event)
  uint32_t move;
  uint64_t extent;        // the fast pool's bytes it gives back (with a pool)
};

}  // namespace

std::vector<uint32_t> move_offsets(const Plan& plan) {
  std::vector<uint32_t> off(plan.events.size() + 1, 0);
  for (size_t k = 0; k < plan.events.size(); ++k)
    off[k + 1] = off[k] + static_cast<uint32_t>(plan.events[k].size());
  return off;
}

bool simulate_plan(const ProfileIndex& index, const Plan& plan, const MemorySystem& mem,
                   const SimOptions& options, SimResult* out, std::string* error) {
  const uint32_t P = index.period();
  if (plan.period != P || plan.events.size() != P) {
    if (error != nullptr)
      *error = "plan period " + std::to_string(plan.period) + " does not match profile period " +
               std::to_string(P);
    return false;
  }
  const auto& objs = index.objects();
  // Moves of event k: moves[move_begin[k] .. move_begin[k + 1]) (one flat array: no per-event
  // allocation, the planner replays large plans many times).
  std::vector<CompiledMove> moves;
  std::vector<uint32_t> move_begin(P + 1, 0);
  uint32_t next_id = 0;
  for (uint32_t k = 0; k < P; ++k) {
    move_begin[k] = static_cast<uint32_t>(moves.size());
    for (const Move& m : plan.events[k]) {
      int64_t i = index.find(m.tag);
      if (i < 0) {
        if (error != nullptr) *error = "plan moves an unknown tag at event " + std::to_string(k);
        return false;
      }
      moves.push_back({static_cast<uint32_t>(i), m.kind, next_id++});
    }
  }
  move_begin[P] = static_cast<uint32_t>(moves.size());
  std::vector<Tier> birth(objs.size());
  for (uint32_t i = 0; i < objs.size(); ++i) birth[i] = plan.birth(objs[i].tag);

  SimResult r;
  r.residency.assign(P, 0);
  if (options.record_moves) {
    r.move_busy_phases.assign(next_id, 0);
    r.move_stall_ns.assign(next_id, 0);
  }
  if (options.record_phases) {
    r.phase_extra_ns.assign(P, 0);
    r.phase_stall_ns.assign(P, 0);
    r.phase_slow_objects.assign(P, {});
  }
  if (options.record_objects) r.object_state.assign(static_cast<size_t>(P) * objs.size(), ObjectPhaseState::kDead);
  if (options.record_fresh) r.object_fresh_bytes.assign(objs.size(), 0);
  std::vector<ObjState> st(objs.size());
  uint64_t resident = 0;
  for (uint32_t i = 0; i < objs.size(); ++i) {
    if (!objs[i].cyclic) continue;
    st[i].alive = true;
    st[i].target = birth[i];
    st[i].counted = birth[i] == Tier::kFast;
    if (st[i].counted) resident += objs[i].size;
  }
  std::deque<PendingEvict> evicting;
  // The fast pool (see cost_model.h and plan/fast_pool_model.h), by the runtime's extents: it starts with
  // nothing parked, and the steps before the reported one fill it. A pool that holds the step's whole peak
  // is no budget (all-DRAM): nothing is charged then.
  const bool pool = options.pool_bytes > 0 && options.pool_bytes < index.peak_bytes();
  FastPoolModel fast_pool(options.pool_bytes);
  uint64_t evicting_extents = 0;  // fast memory the queued evictions give back once they ran
  if (pool) {
    for (uint32_t i = 0; i < objs.size(); ++i) {
      if (st[i].counted) fast_pool.add_live(objs[i].size, &st[i].held);
    }
  }
  double now = 0, channel_free = 0;
  uint64_t seq = 0;
  const double lat_delta = mem.latency_delta_ns();  // streamed misses cost bandwidth only
  const uint32_t steps = std::max<uint32_t>(1, options.steps);
  bool any_violation = false;

  for (uint32_t s = 0; s < steps; ++s) {
    const bool last = s + 1 == steps;
    const double step_start = now;
    for (uint32_t k = 0; k < P; ++k) {
      const uint64_t gphase = static_cast<uint64_t>(s) * P + k;
      // 1. Evictions finished by now free their fast memory.
      while (!evicting.empty() && evicting.front().done <= now) {
        const PendingEvict& e = evicting.front();
        ObjState& o = st[e.obj];
        if (o.alive && o.counted && o.target == Tier::kSlow && o.job_seq == e.seq) {
          o.counted = false;
          resident -= objs[e.obj].size;
          if (pool) fast_pool.leave(o.held);
        }
        evicting_extents -= e.extent;
        if (options.record_moves) {
          uint32_t busy = static_cast<uint32_t>(std::min<uint64_t>(gphase - e.issued_phase, P));
          r.move_busy_phases[e.move] = std::max(r.move_busy_phases[e.move], busy);
        }
        evicting.pop_front();
      }
      // 2. Frees (lifetimes that ended in phase k-1), then 3. allocations of event k.
      for (uint32_t i : index.deaths_at(k)) {
        ObjState& o = st[i];
        if (!o.alive) continue;
        if (o.counted) {
          resident -= objs[i].size;
          if (pool) fast_pool.free(o.held);  // a freed fast object's pages are parked
        }
        o.alive = false;
        o.counted = false;
      }
      uint64_t fresh = 0;
      for (uint32_t i : index.births_at(k)) {
        ObjState& o = st[i];
        o = ObjState{};
        o.alive = true;
        o.target = birth[i];
        o.counted = birth[i] == Tier::kFast;
        if (!o.counted) continue;
        resident += objs[i].size;
        // A parked extent that fits first; failing that its pages are faulted in, and take room.
        if (pool) {
          const uint64_t faulted = fast_pool.birth(objs[i].size, &o.held);
          fresh += faulted;
          if (last && options.record_fresh) r.object_fresh_bytes[i] += faulted;
        }
      }
      // 4. Migrations issued at event k, first in first out on one channel.
      for (uint32_t mi = move_begin[k]; mi < move_begin[k + 1]; ++mi) {
        const CompiledMove& m = moves[mi];
        ObjState& o = st[m.obj];
        const Tier want = m.kind == MoveKind::kPrefetch ? Tier::kFast : Tier::kSlow;
        if (!o.alive || o.target == want) {
          if (last) ++r.noop_moves;
          continue;
        }
        const double size = static_cast<double>(objs[m.obj].size);
        const double start = std::max(now, channel_free);
        const double done = start + mem.migration_ns(size);
        channel_free = done;
        o.target = want;
        o.job_done = done;
        o.job_seq = ++seq;
        o.last_move = m.id;
        if (want == Tier::kFast) {
          if (!o.counted) {
            o.counted = true;
            resident += objs[m.obj].size;
            // Its room when it starts: after the evictions queued ahead of it have given theirs back.
            if (pool) {
              const uint64_t dropped = fast_pool.arrive(objs[m.obj].size, evicting_extents, &o.held);
              if (last) r.trimmed_bytes += dropped;
            }
          }
          o.stall_open = true;
        } else {
          o.stall_open = false;
          const uint64_t extent = pool ? o.held.charge : 0;
          evicting.push_back({done, m.obj, seq, gphase, m.id, extent});
          evicting_extents += extent;
        }
        if (last) {
          r.migrated_bytes += objs[m.obj].size;
          ++r.migrations;
          if (options.record_objects) r.issued.push_back({k, m.obj, m.kind});
        }
      }
      if (last && options.record_objects) {
        ObjectPhaseState* row = &r.object_state[static_cast<size_t>(k) * objs.size()];
        for (uint32_t i = 0; i < objs.size(); ++i) {
          const ObjState& o = st[i];
          if (!o.alive) continue;
          const bool copying = o.job_done > now;
          row[i] = o.target == Tier::kFast ? (copying ? ObjectPhaseState::kToFast : ObjectPhaseState::kFast)
                                           : (copying ? ObjectPhaseState::kToSlow : ObjectPhaseState::kSlow);
        }
      }
      // 5. Residency of phase k.
      r.residency[k] = std::max(r.residency[k], resident);
      r.dram_peak_bytes = std::max(r.dram_peak_bytes, resident);
      if (options.budget_bytes > 0 && resident > options.budget_bytes) {
        ++r.budget_violations;
        if (!any_violation) r.first_violation_phase = k;
        any_violation = true;
      }
      // 6. The phase itself.
      double ready = now;
      double slow_reads = 0, slow_writes = 0;
      for (const PhaseAccessRef& a : index.accesses_in(k)) {
        ObjState& o = st[a.obj];
        if (!o.alive) continue;
        if (o.target == Tier::kFast) {
          if (o.job_done > now) {
            ready = std::max(ready, o.job_done);
            if (o.stall_open) {
              o.stall_open = false;
              if (last) {
                ++r.late_prefetches;
                if (options.record_moves)
                  r.move_stall_ns[o.last_move] = std::max(r.move_stall_ns[o.last_move], o.job_done - now);
                if (options.record_objects) r.late_uses.push_back({k, a.obj, o.job_done - now});
              }
            }
          }
        } else if (o.job_done <= now) {  // an eviction still copying serves from fast memory
          slow_reads += static_cast<double>(a.reads);
          slow_writes += static_cast<double>(a.writes);
          if (last && options.record_phases) r.phase_slow_objects[k].push_back(a.obj);
          continue;
        }
        if (last) {
          r.fast_reads += static_cast<double>(a.reads);
          r.fast_writes += static_cast<double>(a.writes);
        }
      }
      const double d = static_cast<double>(index.duration(k));
      const double stall = options.stalls ? ready - now : 0.0;
      double extra = 0;
      if (options.slow_penalty) {
        // slow_reads: lines read from the slow tier (misses); slow_writes: lines written to it
        // (write-backs, or stores of a profile without them; profile_index.h).
        const double lat = slow_reads * lat_delta;
        const double bwt = slow_reads * mem.access_bytes / mem.slow.read_bw_gbps +
                           slow_writes * mem.access_bytes / mem.slow.write_bw_gbps - d;
        extra = std::max(0.0, std::max(lat, bwt));
      }
      const double fault = static_cast<double>(fresh) * mem.fault_ns_per_byte;
      now += stall + d + extra + fault;
      if (last) {
        r.fresh_bytes += fresh;
        r.fault_ns += fault;
        r.slow_reads += slow_reads;
        r.slow_writes += slow_writes;
        r.base_ns += d;
        r.slow_extra_ns += extra;
        r.stall_ns += stall;
        if (options.record_phases) {
          r.phase_extra_ns[k] = extra;
          r.phase_stall_ns[k] = stall;
        }
      }
    }
    if (last) r.step_ns = now - step_start;
  }
  if (options.record_moves) {
    const uint64_t end_phase = static_cast<uint64_t>(steps) * P;
    for (const PendingEvict& e : evicting) {
      uint32_t busy = static_cast<uint32_t>(std::min<uint64_t>(end_phase - e.issued_phase, P));
      r.move_busy_phases[e.move] = std::max(r.move_busy_phases[e.move], busy);
    }
  }
  *out = std::move(r);
  return true;
}

}  // namespace sentinel
