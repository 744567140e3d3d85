// What the planner tests share: a profile indexed, a memory system (a tier preset), and the planner and
// the replay called on them, failing the test on any error.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "plan/budget_repair.h"
#include "plan/cost_model.h"
#include "plan/planner.h"

namespace sentinel::test {

struct PlanEnv {
  ProfileIndex index;
  MemorySystem mem;
  // The planner's mechanics tests were written against a latency-bound slow tier and a 3.3 GB/s
  // channel (their comments give copy times at that rate), and without the fast pool's faults: those
  // values stay fixed here so that a preset's change (stream_share, the emulator's migration figure) or
  // the fast pool's model (plan/fast_pool_model.h) does not change what they test. The tests of the
  // faults set fault_ns_per_byte themselves; tests of the presets pass as_preset = true.
  explicit PlanEnv(const StepProfile& p, const char* tier = "cxl", bool as_preset = false) {
    std::string err;
    EXPECT_TRUE(index.build(p, &err)) << err;
    EXPECT_TRUE(memory_system_preset(tier, &mem, nullptr));
    if (!as_preset) {
      mem.stream_share = 0;
      mem.migration_bw_gbps = 3.3;
      mem.fault_ns_per_byte = 0;
    }
  }
  // The planner's plan for `budget`; a plan that exceeds the budget at any event fails the test.
  Plan plan(uint64_t budget, PlannerConfig cfg = {}) const {
    cfg.budget_bytes = budget;
    Plan out;
    std::string err;
    EXPECT_TRUE(plan_sentinel(index, mem, cfg, &out, &err)) << err;
    EXPECT_EQ(check_plan_budget(index, out, mem, budget, nullptr), 0u);
    return out;
  }
  // The replay of plan `p` (moves recorded) on `m`, or on this memory system, with the fast pool of the
  // budget as the planner models it (cost_model.h).
  SimResult eval(const Plan& p, uint64_t budget = 0, const MemorySystem* m = nullptr) const {
    SimOptions opt;
    opt.budget_bytes = budget;
    opt.pool_bytes = budget;
    opt.record_moves = true;
    SimResult r;
    std::string err;
    EXPECT_TRUE(simulate_plan(index, p, m ? *m : mem, opt, &r, &err)) << err;
    return r;
  }
  double step_ns(const Plan& p) const { return eval(p).step_ns; }
  double all_dram_ns() const { return static_cast<double>(index.step_ns()); }
};

}  // namespace sentinel::test
