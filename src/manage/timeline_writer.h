// TimelineWriter: writes what the plan executor did (docs/timeline-format.md, version 2): for the first
// `max_steps` managed steps, at every phase, which live objects were fast, slow or moving, and every move
// issued and finished, as JSON lines. `sentinel replay PROFILE --timeline FILE` reads it back
// (plan/timeline.h).
//
// Recording is meant to be cheap inside someone else's training job: the first phase record of a step lists
// every live object (a key frame), every later one only the objects whose state changed since the step's
// previous record (a delta). The executor reports each change of an object (born, freed, move issued, move
// ended) through on_object_changed, so a phase record costs in proportion to what changed, not to what is
// live. Writing every live object at every phase cost about 0.6 M instructions per allocation event in the
// guest (docs/results.md).
//
// Invariant: while a step is recorded, written_ holds each live object's state as the step's records so far
// describe it, and pending_ each object whose state changed since the last record (its state now).
//
// Thread safety: none; the executor's thread calls it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>

#include "manage/plan_executor.h"

namespace sentinel::manage {

class TimelineWriter : public ExecutionObserver {
 public:
  TimelineWriter(std::ostream* out, uint32_t max_steps) : out_(out), max_steps_(max_steps) {}
  // The executor whose live objects the key frames list (set once it exists).
  void attach(const PlanExecutor* executor) { executor_ = executor; }
  // Written once, before the first step: the plan's identity.
  void header(uint32_t period, const std::string& policy, uint64_t budget_bytes);

  void on_step_begin(int64_t step, bool managed) override;
  void on_phase_begin(int64_t step, uint32_t phase) override;
  void on_move_issued(int64_t step, uint32_t phase, uint64_t tag, Tier to) override;
  void on_move_finished(int64_t step, uint32_t phase, uint64_t tag, Tier to, bool moved) override;
  void on_deviation(int64_t step, uint32_t event) override;
  void on_object_changed(ObjectRef ref, uint64_t tag, bool live, Tier tier, bool moving) override;

  uint32_t steps_written() const { return steps_written_; }
  // Wall time stamps come from here (tests give a fake clock).
  void set_clock(uint64_t (*now_ns)()) { now_ns_ = now_ns; }

 private:
  // What a phase record says of one object instance.
  enum class State : uint8_t { kGone, kFast, kSlow, kMoving };
  struct Entry {
    uint64_t tag = 0;
    State state = State::kGone;
  };

  bool recording(int64_t step) const { return step == recording_step_; }
  uint64_t now() const { return now_ns_ != nullptr ? now_ns_() : 0; }
  void write_key_frame(int64_t step, uint32_t phase);
  void write_delta(int64_t step, uint32_t phase);

  std::ostream* out_;
  const PlanExecutor* executor_ = nullptr;
  uint32_t max_steps_;
  uint32_t steps_written_ = 0;
  int64_t recording_step_ = -1;
  bool key_frame_written_ = false;              // in the recorded step
  std::unordered_map<uint64_t, Entry> written_;  // by ObjectRef::key()
  std::unordered_map<uint64_t, Entry> pending_;  // by ObjectRef::key()
  uint64_t (*now_ns_)() = nullptr;
};

}  // namespace sentinel::manage
