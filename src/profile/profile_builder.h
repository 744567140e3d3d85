// Builds a StepProfile from what the runtime observes during the profiled steps: object births and
// deaths on the step clock, per-phase access estimates from a sampler, and event times.
//
// Objects are identified while they live by an instance key (the runtime uses extent slot and
// generation) and in the profile by their tag, which is the same for the same tensor in every step.
// Counts are averaged over the profiled steps. Objects alive when profiling starts are persistent
// (weights, optimizer state, gradients kept across steps).
//
// Step-relative indices: `step` below is 0 for the first profiled step, 1 for the next, ...; events
// with step >= profiled_steps only close lifetimes (an object born in the last profiled step and
// freed early in the next one wraps past the step end).
//
// Thread safety: none; the runtime's service thread owns it. Allocates freely.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profile/profile.h"

namespace sentinel {

class ProfileBuilder {
 public:
  ProfileBuilder(uint32_t period, uint32_t profiled_steps);

  void add_persistent(uint64_t key, uint64_t tag, uint64_t site, uint32_t occurrence, uint64_t size);
  // An allocation event: the start of phase `event` of step `step`.
  void on_alloc(uint64_t key, uint64_t tag, uint64_t site, uint32_t occurrence, uint64_t size,
                uint32_t step, uint32_t event, uint64_t time_ns, uint64_t live_bytes_after);
  void on_free(uint64_t key, uint32_t step, uint32_t event, uint64_t live_bytes_after);
  // What step `step` allocated so far, from its event 0 to time_ns, was not the step: the births leave the
  // profile, with their lifetimes and the phase times they measured, and the step begins again at its next
  // event 0 (until then, time is no phase's). The step detector began the step over (core/step_clock.h:
  // an evaluation pass that starts with the step's anchor call-site is taken for the step's start until
  // the training step's anchor comes), or the profiler leaves a step that deviated out of the profile and
  // profiles the next one in its place. Before any event of `step`, only the phase before it ends. An
  // object whose tag other profiled steps also made keeps the accesses the dropped instance added (averaged
  // over the instances that stay: a sampler's counts are not kept per instance); one whose only instances
  // were dropped goes entirely.
  void begin_step_over(uint32_t step, uint64_t time_ns);
  // Estimated accesses (and write-backs, where the sampler sees them) of a live object in a phase
  // (already scaled to the whole object).
  void on_access(uint64_t key, uint32_t step, uint32_t phase, uint64_t reads, uint64_t writes,
                 uint64_t writebacks = 0);
  // The first event of step `profiled_steps` (or the end of the run): closes the last phase.
  void on_profile_end(uint64_t time_ns);

  // Phase durations measured in a step without sampling (the one before profiling). The sampler slows
  // the profiled steps down; the planner needs the program's own timing, so build() reports these
  // when they are given (one per phase), and the profiled steps' timing otherwise.
  void set_unsampled_phase_ns(std::vector<uint64_t> phase_ns) { unsampled_phase_ns_ = std::move(phase_ns); }

  bool has_complete_step() const { return end_ns_ != 0 && !step_start_ns_.empty(); }
  StepProfile build(const std::string& sampler, uint64_t sample_period, const std::string& program) const;

 private:
  struct Instance {
    uint64_t tag;
    bool persistent;
    uint32_t birth_step;
    bool defined_death = false;  // its free set the tag's lifetime (the first profiled instance to die)
  };
  struct Accum {
    ObjectProfile object;
    uint32_t instances = 0;  // how many steps produced this tag
    bool died = false;
    // A "persistent" object freed while profiling was the warm-up step's copy of a step-local object
    // (the previous input batch, say), not a persistent one: it is left out of the profile, and the
    // step-local object that took a derived tag because of it gets its own tag back.
    // (Only when such a step-local object exists: a persistent object replaced by one with another tag,
    // a weight swapped out say, keeps its whole-step life.)
    bool freed_while_profiling = false;
    bool has_derived = false;
    bool phantom() const { return freed_while_profiling && has_derived; }
    uint64_t base_tag = 0;  // for a derived tag: the tag it was derived from
    std::unordered_map<uint32_t, PhaseAccess> by_phase;
  };
  Accum& accum_for(uint64_t tag);
  ObjectProfile new_object(uint64_t tag, uint64_t site, uint32_t occurrence, uint64_t size,
                           uint32_t birth_phase) const;

  uint32_t period_;
  uint32_t steps_;
  std::unordered_map<uint64_t, Instance> live_;  // by instance key
  // Instances freed while profiling, by key: the sampler reports a phase's accesses when the next
  // phase begins, after the objects that died in it are gone.
  std::unordered_map<uint64_t, Instance> dead_;
  std::unordered_map<uint64_t, Accum> by_tag_;
  std::vector<uint64_t> tag_order_;  // first-seen order, so output is deterministic
  std::vector<uint64_t> phase_ns_;   // summed over steps
  std::vector<uint64_t> step_phase_ns_;  // what the step in progress (last_step_) added to phase_ns_
  std::vector<uint64_t> unsampled_phase_ns_;
  std::vector<uint64_t> step_start_ns_;
  uint64_t last_event_ns_ = 0;
  uint32_t last_step_ = 0;
  uint32_t last_event_ = 0;
  bool any_event_ = false;
  uint64_t end_ns_ = 0;
  uint64_t peak_bytes_ = 0;
};

}  // namespace sentinel
