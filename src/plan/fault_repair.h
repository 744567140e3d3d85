// Internal to the planner: a pass over the finished plan against the fast pool's faults (cost_model.h,
// plan/fast_pool_model.h). Under a budget the runtime's fast memory holds live objects and the parked
// extents of freed ones; a fast birth whose size class no parked extent has faults its pages in, and the
// kernel zeroes them on the program's thread, every step. For an object that is born, used a few times and
// freed within the step, that can cost more than its accesses would cost on the slow tier (optane: 0.7 ns
// per byte faulted against about 0.1 ns per byte for a streamed pass from the slow tier), and the planner's
// selection does not see it (it counts an object's value in accesses, its cost in fast memory). This pass
// replays the plan, sends slow the fast births with no move that faulted more than their accesses save
// (the largest margins first; half of them, then a quarter, when all of them do not pay), keeps a change
// only if the modeled step gets shorter, and repeats with the pool the change leaves. Sending a birth slow
// never raises fast residency, so the plan stays within budget.
//
// Thread safety: pure function of its arguments.
#pragma once

#include <cstdint>

#include "plan/plan.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel::plan_detail {

struct FaultRepairStats {
  uint32_t sent_slow = 0;  // fast births made slow
  double saved_ns = 0;     // modeled step time saved
};

// At most max_rounds rounds, each up to four replays.
void repair_faults(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, uint32_t sim_steps,
                   uint32_t max_rounds, Plan* plan, FaultRepairStats* stats);

}  // namespace sentinel::plan_detail
