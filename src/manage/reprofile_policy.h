// When managed mode gives up a plan whose steps keep leaving it, and how often it profiles again.
//
// A step that leaves the plan (an allocation the plan did not expect) runs first-touch under the budget
// for the rest of that step. Three such steps in a row mean the plan no longer describes the program: the
// plan is dropped and the program profiled again. Some programs never repeat exactly: a GRU over
// variable sequence lengths allocates a different number of tensors in each step, so every new profile
// describes one kind of step and the next steps leave it again. Profiling costs the program real time
// (the software sampler's page faults), so dropping and profiling again at every third step made such
// programs slower than first-touch without earning anything back.
//
// The policy: a plan that held (`held_steps` followed steps in a row) resets the count of plans that did
// not. Each plan that is dropped before it held makes the next plan wait longer before it may be
// dropped (`backoff_base_steps`, doubled for every further one, measured from the step the plan starts);
// while it waits, the plan stays in force for the steps that follow it. After `max_unheld_plans` plans in
// a row that did not hold, managed mode stops profiling again and keeps the last plan. The number of
// profiles in a run of S steps is then at most max_unheld_plans (and never more than about log2(S)).
//
// Thread safety: none (the manager calls it on the service thread). Pure logic, no allocation.
#pragma once

#include <cstdint>

namespace sentinel::manage {

class ReprofilePolicy {
 public:
  struct Settings {
    uint32_t fallbacks_before_drop = 3;  // steps in a row that left the plan
    uint32_t held_steps = 16;            // followed steps in a row that make a plan one that held
    uint32_t backoff_base_steps = 8;     // wait of the plan after the first one that did not hold
    uint32_t max_backoff_shift = 10;     // the wait doubles at most this often
    uint32_t max_unheld_plans = 6;       // then no more profiling
  };
  enum class Verdict {
    kKeep,             // the plan stays in force
    kDrop,             // drop the plan and profile again
    kStopReprofiling,  // returned once: the plan stays in force and will not be dropped for fallbacks again
  };

  ReprofilePolicy() = default;
  explicit ReprofilePolicy(const Settings& s) : s_(s) {}

  // A plan is in force from step `first` on.
  void plan_started(int64_t first);
  // One closed step under the plan in force: followed to its end, or left.
  Verdict step_closed(int64_t step, bool followed);
  // The plan was dropped for another reason (the step structure changed): it counts as one that did not
  // hold unless it had. False once re-profiling has stopped (the caller then keeps running first-touch).
  bool may_profile_after_structure_change();

  bool stopped() const { return stopped_; }
  uint32_t unheld_plans() const { return unheld_; }
  // Drops the backoff held back (three fallbacks in a row before the plan's wait was over).
  uint64_t drops_deferred() const { return deferred_; }
  // The first step at which the plan in force may be dropped for fallbacks.
  int64_t drop_allowed_from() const { return gate_; }

 private:
  void count_unheld();

  Settings s_;
  int64_t gate_ = 0;
  uint32_t fallbacks_in_row_ = 0, followed_in_row_ = 0, unheld_ = 0;
  bool held_ = false, stopped_ = false;
  uint64_t deferred_ = 0;
};

}  // namespace sentinel::manage
