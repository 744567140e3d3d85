// TimelineWriter: writes what the plan executor did (docs/timeline-format.md): for the first `max_steps`
// managed steps, at every phase, which live objects were fast, slow or moving, and every move issued and
// finished, as JSON lines. `sentinel replay PROFILE --timeline FILE` reads it back (plan/timeline.h).
//
// Thread safety: none; the executor's thread calls it.
#pragma once

#include <cstdint>
#include <ostream>

#include "manage/plan_executor.h"

namespace sentinel::manage {

class TimelineWriter : public ExecutionObserver {
 public:
  TimelineWriter(std::ostream* out, uint32_t max_steps) : out_(out), max_steps_(max_steps) {}
  // The executor whose live objects the phase records list (set once it exists).
  void attach(const PlanExecutor* executor) { executor_ = executor; }
  // Written once, before the first step: the plan's identity.
  void header(uint32_t period, const std::string& policy, uint64_t budget_bytes);

  void on_step_begin(int64_t step, bool managed) override;
  void on_phase_begin(int64_t step, uint32_t phase) override;
  void on_move_issued(int64_t step, uint32_t phase, uint64_t tag, Tier to) override;
  void on_move_finished(int64_t step, uint32_t phase, uint64_t tag, Tier to, bool moved) override;
  void on_deviation(int64_t step, uint32_t event) override;

  uint32_t steps_written() const { return steps_written_; }
  // Wall time stamps come from here (tests give a fake clock).
  void set_clock(uint64_t (*now_ns)()) { now_ns_ = now_ns; }

 private:
  bool recording(int64_t step) const { return step == recording_step_; }
  uint64_t now() const { return now_ns_ != nullptr ? now_ns_() : 0; }

  std::ostream* out_;
  const PlanExecutor* executor_ = nullptr;
  uint32_t max_steps_;
  uint32_t steps_written_ = 0;
  int64_t recording_step_ = -1;
  uint64_t (*now_ns_)() = nullptr;
};

}  // namespace sentinel::manage
