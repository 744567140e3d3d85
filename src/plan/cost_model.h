// The cost model: replays a Plan over a profile on a MemorySystem and returns the modeled step time,
// the fast-tier residency at every event, migrated bytes and late prefetches. docs/tier-model.md
// states the formulas, assumptions and limits; in short, for every phase k of the step:
//
//   time(k) = stall(k) + duration(k) + max(latency_extra(k), bandwidth_extra(k))
//   latency_extra(k)   = slow_reads(k) * (slow.latency - fast.latency) / mlp
//   bandwidth_extra(k) = max(0, slow_bytes_read(k)/slow.read_bw + slow_bytes_written(k)/slow.write_bw
//                               - duration(k))
//   stall(k)           = wait at the phase start for prefetches of objects accessed in phase k
//   fault(k)           = fresh_bytes(k) * fault_ns_per_byte, with a fast pool (SimOptions::pool_bytes)
//
// The fast pool (pool_bytes > 0, below the profile's peak) is the runtime's fast memory under a budget:
// live fast objects plus parked pages, the pages of freed fast objects kept for the next fast births
// (place/budget_placer.h). A fast birth takes parked pages first; what they do not cover is fresh_bytes,
// pages the program faults in and the kernel zeroes. A prefetch takes its room when it starts on the
// channel (the evictions queued ahead of it have freed theirs by then); where the live objects and the
// parked pages leave it none, parked pages are dropped for it (trimmed_bytes), and later births fault
// those in. So moves that bring pages in without evictions that give as many back first cost the
// program faults, and the model says how much. The pool is replayed by size class as the runtime keeps
// it (plan/fast_pool_model.h): a birth takes a parked extent of its class, or of one up to twice its size,
// and room is made by dropping whole extents, so births whose class no parked extent has fault too.
//
// duration(k) is the phase duration measured on DRAM only. Migrations run in the background on one
// FIFO channel at migration_bw. The replay runs `steps` steps back to back (the channel carries its
// backlog from one step to the next) and reports the last one; residency is checked in every step.
//
// Monotonicity (why the planner can check its budget with slow_penalty = stalls = false): with longer
// phases every migration completes at the same or an earlier event, so the fast-tier residency at
// every event can only go down. A plan within budget at measured durations is within budget under any
// tier model.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

struct SimOptions {
  uint32_t steps = 3;          // steps replayed; the last is reported
  bool slow_penalty = true;    // add the slow-tier extra time to phases
  bool stalls = true;          // wait for late prefetches
  uint64_t budget_bytes = 0;   // residency above it is counted as a violation (0: no check)
  bool record_moves = false;   // fill SimResult::move_* (the planner's repair loop needs them)
  bool record_phases = false;  // fill SimResult::phase_* (diagnostics; does not change the model)
  bool record_objects = false; // fill SimResult::object_state and ::issued (reports; no model change)
  uint64_t pool_bytes = 0;     // the fast pool (see above; the budget); 0: no pool, no fault time
  bool record_fresh = false;   // fill SimResult::object_fresh_bytes (the planner's fault repair)
};

// Where an object is during a phase of the last replayed step (record_objects).
enum class ObjectPhaseState : uint8_t {
  kDead = 0,        // not alive in this phase
  kFast = 1,
  kSlow = 2,
  kToFast = 3,      // a prefetch is copying it during (part of) the phase
  kToSlow = 4,      // an eviction is copying it; it still holds fast memory
};

// A migration the last replayed step issued (no-op moves left out).
struct IssuedMove {
  uint32_t phase = 0;
  uint32_t obj = 0;       // index into ProfileIndex::objects()
  MoveKind kind = MoveKind::kEvict;
};

// A use that waited for a prefetch still copying (a late prefetch) in the last replayed step.
struct LateUse {
  uint32_t phase = 0;     // the phase that waited
  uint32_t obj = 0;
  double stall_ns = 0;
};

struct SimResult {
  // Last replayed step.
  double step_ns = 0;
  double base_ns = 0;          // sum of measured phase durations
  double slow_extra_ns = 0;
  double stall_ns = 0;
  // Accesses (cache lines, access_bytes each) of the last step by the tier that served them: the
  // traffic the plan sends to each tier, to set against a measured miss count per node.
  double slow_reads = 0, slow_writes = 0;
  double fast_reads = 0, fast_writes = 0;
  uint64_t migrated_bytes = 0;
  uint32_t migrations = 0;     // effective (non-no-op) migrations
  uint32_t late_prefetches = 0;
  uint32_t noop_moves = 0;
  // The fast pool (SimOptions::pool_bytes), last step: fast births' bytes that found no parked pages,
  // the time faulting them in took, and parked bytes dropped to make room for prefetches.
  uint64_t fresh_bytes = 0;
  double fault_ns = 0;
  uint64_t trimmed_bytes = 0;
  // With record_fresh, per object (index into ProfileIndex::objects()): the bytes its fast births of the
  // last step faulted in.
  std::vector<uint64_t> object_fresh_bytes;
  // All replayed steps.
  uint64_t dram_peak_bytes = 0;
  uint32_t budget_violations = 0;  // (step, phase) pairs with residency above budget_bytes
  uint32_t first_violation_phase = 0;
  std::vector<uint64_t> residency;  // per phase: max over the replayed steps
  // With record_moves, per move of the plan in flattened order (events[0] moves, events[1] ...):
  std::vector<uint32_t> move_busy_phases;  // evictions: phases the copy kept fast memory (max)
  std::vector<double> move_stall_ns;       // prefetches: stall caused in the last step
  // With record_phases, per phase of the last step: extra time, stall, and the objects whose
  // accesses in that phase were served by the slow tier.
  std::vector<double> phase_extra_ns;
  std::vector<double> phase_stall_ns;
  std::vector<std::vector<uint32_t>> phase_slow_objects;
  // With record_objects, for the last step: object_state[k * objects + i] at the start of phase k
  // (after the migrations of event k were issued), the issued migrations in issue order and the
  // late prefetches (late_uses.size() == late_prefetches).
  std::vector<ObjectPhaseState> object_state;
  std::vector<IssuedMove> issued;
  std::vector<LateUse> late_uses;
};

// Flattened move index of events[k][i].
std::vector<uint32_t> move_offsets(const Plan& plan);

// Returns false with *error when the plan does not fit the profile (period differs, a move names a
// tag the profile does not have).
bool simulate_plan(const ProfileIndex& index, const Plan& plan, const MemorySystem& mem,
                   const SimOptions& options, SimResult* out, std::string* error);

}  // namespace sentinel
