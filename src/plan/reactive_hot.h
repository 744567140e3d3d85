// The reactive-hot baseline (Linux NUMA-balancing memory tiering / TPP): a step-by-step simulation on
// measured phase durations. An object is allocated on the fast tier when the budget has room at that
// moment. Accesses observed in phase k promote slow objects at event k+1, most accessed first, within
// a token-bucket rate limit; when fast memory is full the least recently accessed fast objects are
// demoted (their copy frees memory only when done), and the promotion waits for a later phase.
// After cfg.warm_steps steps the last step's decisions are recorded as a Plan (not yet normalised
// or budget-checked: make_plan does both).
//
// Thread safety: pure function.
#pragma once

#include <cstdint>

#include "plan/baselines.h"

namespace sentinel {

Plan reactive_hot_plan(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                       const ReactiveConfig& cfg);

}  // namespace sentinel
