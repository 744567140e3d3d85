// BirthTable: the part of a plan the allocation path reads. When the program allocates an object, the
// runtime asks which tier the plan wants it born on, before it picks the extent.
//
// The service thread builds a table from a CompiledPlan and publishes it with one atomic pointer store;
// the allocation path only reads it (no allocation, no lock, no system call). A reader uses the table only
// inside decide(), which its caller serialises with a lock; so the publisher frees a replaced table after
// taking that lock once after the publish, when no reader can still hold it (the runtime does this in
// preload/manager.cc, publish_births: re-profiling is not bounded, and keeping every table would grow).
//
// BirthGate holds the allocation path's view of the current step: whether the step is under the plan and
// whether it has left it, decided by the one deviation rule the executor on the service thread applies to
// its moves too (step_starts_on_plan, event_leaves_plan in compiled_plan.h). Every birth of a step after it
// left the plan, and of a step that started under another period, is first-touch.
//
// Thread safety: BirthTable is immutable after build(), but for its BirthOrder, the gate's scratch record of
// the current step's births, which only BirthGate::decide touches. BirthGate::decide must be serialised by the
// caller (the runtime calls it under its step-clock lock), and the table current() returns must not be
// used after that lock is released; publish() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "manage/compiled_plan.h"

namespace sentinel::manage {

enum class BirthWant : uint8_t { kFirstTouch, kFast, kSlow };

class BirthTable {
 public:
  // The table applies from step `first_step` on (the step at which the plan takes over).
  void build(const CompiledPlan& plan, int64_t first_step);

  uint32_t period() const noexcept { return period_; }
  int64_t first_step() const noexcept { return first_step_; }
  std::span<const uint64_t> expected_tags() const noexcept { return expected_; }
  // kFirstTouch for a tag the plan does not know.
  BirthWant lookup(uint64_t tag) const noexcept;
  // The profile's birth event of the plan's step-local object of this tag; kNoPosition for another.
  uint32_t position_of(uint64_t tag) const noexcept;
  // The allocation path's record of the births of its current step (BirthGate, under the caller's lock):
  // sized here, so that the gate never allocates.
  BirthOrder& order() const noexcept { return order_; }
  // Whether the executor has work of the plan's at this event: moves, or the step's start (event 0, where it
  // catches persistent objects up). Events past the period count as acting.
  bool acts_at(uint32_t event) const noexcept { return event >= period_ || acts_[event] != 0; }

 private:
  struct Slot {
    uint64_t tag = 0;  // 0 = empty (tags are never 0: see make_tag)
    BirthWant want = BirthWant::kFirstTouch;
    uint32_t position = kNoPosition;
  };
  const Slot* find(uint64_t tag) const noexcept;  // nullptr for a tag the plan does not know
  uint32_t period_ = 0;
  int64_t first_step_ = 0;
  uint64_t mask_ = 0;
  std::vector<uint64_t> expected_;
  std::vector<uint8_t> acts_;  // by event
  std::vector<Slot> slots_;  // open addressing, power-of-two size, at most half full
  mutable BirthOrder order_;
};

struct BirthDecision {
  BirthWant want = BirthWant::kFirstTouch;
  bool deviated_now = false;  // this event is where the step left the plan
  bool unknown_tag = false;   // the plan is in force and does not know the tag: the birth is first-touch
  // The plan is in force and has nothing to do at this event (no move, not a step's start, not where the
  // step leaves the plan; or the step already left it): the executor may see the event later, in order
  // with others, without changing what it does. False whenever no table applies.
  bool quiet = false;
};

class BirthGate {
 public:
  constexpr BirthGate() = default;
  void publish(const BirthTable* table) noexcept { table_.store(table, std::memory_order_release); }
  const BirthTable* current() const noexcept { return table_.load(std::memory_order_acquire); }

  // The tier for an object allocated with `tag` at (step, event) while the detector's period is `period`.
  BirthDecision decide(int64_t step, uint32_t event, uint32_t period, uint64_t tag) noexcept;

 private:
  std::atomic<const BirthTable*> table_{nullptr};
  // The step the allocation path is in (guarded by the caller's lock): its index, the detector's period at
  // its start, the last event seen, and whether it has left the plan.
  int64_t step_ = -1;
  const BirthTable* order_table_ = nullptr;  // the table whose BirthOrder holds this step's births
  uint32_t step_period_ = 0;
  uint32_t event_ = 0;
  bool step_left_ = false;
  bool order_reset_pending_ = false;  // a step began: its table's BirthOrder starts empty
};

}  // namespace sentinel::manage
