// CompiledPlan: a Plan arranged for execution on the step clock, together with what the runtime needs
// to check it against the running program (the profile the plan was made from).
//
// Built on the service thread from a Plan and the ProfileIndex of its profile; read by the plan
// executor (plan_executor.h) and, through BirthTable (birth_table.h), by the allocation path.
//
// What it holds, per event k of the step (0..period-1):
//  - expected_tag[k]: the tag of the non-persistent object the profiled step allocated at event k (0 when
//    the profile has none there). A running step whose allocation at event k has another tag has left the
//    plan (a deviation: an evaluation pass, another batch shape, a stray allocation that shifts the clock).
//  - moves[k]: the plan's migrations issued right after the allocation of event k, in channel order, each
//    with the phase of the next access it serves (prefetches), so the executor can tell a late prefetch.
//  - fast_uses[k]: (tag, bytes) of the objects that the plan wants on the fast tier in phase k and that the
//    profile saw accessed in phase k: the bytes whose placement matters in that phase. plan_fidelity is
//    measured over these.
// and per tag its birth tier, its extent bytes and whether it is persistent (alive across steps).
//
// Thread safety: immutable after compile(); concurrent readers are fine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/hash.h"
#include "plan/plan.h"
#include "plan/profile_index.h"

namespace sentinel::manage {

struct PlannedMove {
  uint64_t tag = 0;
  MoveKind kind = MoveKind::kEvict;
  // Prefetches: the phase of the first access at or after the issue event (cyclic), and how many step
  // boundaries lie between issue and that phase (0 or 1). kNoUse when the profile saw no later access.
  uint32_t need_phase = kNoUse;
  uint32_t need_step_offset = 0;
  static constexpr uint32_t kNoUse = 0xffffffffu;
};

struct FastUse {
  uint64_t tag = 0;
  uint64_t bytes = 0;
};

struct PlannedObject {
  Tier birth = Tier::kSlow;
  uint64_t bytes = 0;        // extent bytes
  bool persistent = false;
  uint32_t birth_event = 0;  // non-persistent objects
};

// The tag the profile's step expects at each event 0..period-1: that of the non-persistent object born there,
// 0 where none is. The one copy of this rule: the compiled plan (expected_tag) and ProfileMatcher
// (profile_match.h) both take it from here.
std::vector<uint64_t> expected_tags(const ProfileIndex& index);

// The tag under which the plan knows an object the program allocated with `tag` at an event where the plan
// expects `expected`. A step-local object whose call-site and occurrence equal those of a persistent
// object (a gradient buffer allocated in the first step and kept, say) has the persistent object's tag; the
// profile records it under a derived tag (core/hash.h), and so must the runtime. Inline: the allocation path
// asks at every birth (BirthGate::decide).
inline uint64_t plan_tag(uint64_t tag, uint64_t expected) {
  return expected != 0 && expected != tag && derived_tag(tag) == expected ? expected : tag;
}

// Allocations that different threads make in one step reach the step clock in another order from step to
// step: a data-parallel rank's communication thread allocates while its autograd thread does (ddp_mlp.py:
// the tags expected at events 9-11 of a 13-event step came in another order in a third of the steps;
// resnet18 under DDP: one tag came 5-10 events from where the profile had it, and 23-29 events late in 3 of 40
// steps of two ranks on an idle machine, 2026-12-07, when the window was period/16 = 20 and half the runs of
// torch.ddp_zoo_two_ranks failed). So the plan follows a step whose births are the plan's step-local objects
// in another order, as long as none comes more than order_window(period) events after its place in the
// profile (BirthOrder); the births go by tag. A step
// that lacks one of them (an odd batch whose first tensor is too small to be an object, so that every later
// birth comes one event early) leaves the plan once that birth is overdue, as does a tag the plan does not
// know.
inline constexpr uint32_t kNoPosition = 0xffffffffu;
inline uint32_t order_window(uint32_t period) { return period / 4 > 4 ? period / 4 : 4; }

struct TagAtEvent {
  uint64_t tag = 0;       // as the plan knows it (plan_tag, or the derived tag of a persistent object's twin)
  bool expected = false;  // the plan knows it as a step-local object, or expects none at this event
  uint32_t position = kNoPosition;  // the event of its birth in the profile (kNoPosition: none)
};

// `tag` allocated at `event` of a step, against `expected` (the plan's tag per event: expected_tags) and
// `position_of(t)`: the birth event of the plan's step-local object of tag t, or kNoPosition. An event past
// the expected ones is not expected. Inline: the allocation path asks at every birth.
template <class PositionOf>
inline TagAtEvent match_tag(std::span<const uint64_t> expected, uint32_t event, uint64_t tag, const PositionOf& position_of) {
  if (event >= expected.size()) return {tag, false, kNoPosition};
  const uint64_t here = expected[event];
  if (here == tag) return {tag, true, event};
  const uint64_t derived = derived_tag(tag);
  if (here != 0 && here == derived) return {here, true, event};
  if (const uint32_t p = position_of(derived); p != kNoPosition) return {derived, true, p};
  if (const uint32_t p = position_of(tag); p != kNoPosition) return {tag, true, p};
  return {tag, here == 0, kNoPosition};
}

// Which of the plan's step-local births a step has made so far. resize() may allocate (the table's
// build, the executor's plan start); reset() and on_birth() do not (the allocation path).
class BirthOrder {
 public:
  void resize(uint32_t period) { seen_.assign(period, 0); next_ = 0; }
  void reset() noexcept {
    std::fill(seen_.begin(), seen_.end(), uint8_t{0});
    next_ = 0;
  }
  // The birth at `event` of the object the profile had at `position` (kNoPosition: none). False where the
  // step leaves the plan: a birth the profile had at least order_window events before `event` has not come.
  bool on_birth(std::span<const uint64_t> expected, uint32_t event, uint32_t position) noexcept {
    // A tag born twice in a step (a call-site's occurrence counted from another point than the step's
    // start) marks its first place only; a later place of it that stays empty makes it overdue.
    if (position != kNoPosition && position < seen_.size()) seen_[position] = 1;
    while (next_ < seen_.size() && (expected[next_] == 0 || seen_[next_] != 0)) ++next_;
    return next_ >= seen_.size() || next_ + order_window(static_cast<uint32_t>(seen_.size())) > event;
  }

 private:
  std::vector<uint8_t> seen_;
  uint32_t next_ = 0;  // the first event whose step-local birth has not come
};

// The deviation rule, the one copy: the allocation path (BirthGate, birth_table.h) and the plan executor
// (plan_executor.h) both decide with these whether a step follows the plan, so that births and moves never
// disagree about it.
//
// A step is under the plan from its start (or from event 0 again, where the detector began it over) when
// the plan applies from that step on and the detector's period is the plan's. A step that starts under
// another period stays off the plan to its end, whatever the period later.
inline bool step_starts_on_plan(int64_t step, uint32_t period, int64_t first_step, uint32_t plan_period) {
  return step >= first_step && period == plan_period;
}
// A step under the plan leaves it at the first allocation past the plan's period (the detector counts on
// while it waits for the step's end), made while the detector's period is not the plan's (it re-detected
// the step structure in the middle of the step), carrying a tag the plan does not know as a step-local
// object where the profile had one (`match`: match_tag), or out of the plan's order (`order`, which this
// call updates: BirthOrder): the rest of that step is first-touch and issues no move. (A step that went
// through the plan's whole period before it went past it, such as an evaluation pass after the optimizer's
// step, still counts as managed: PlanExecutor.)
inline bool event_leaves_plan(uint32_t event, uint32_t period, uint32_t plan_period, TagAtEvent match,
                              std::span<const uint64_t> expected, BirthOrder& order) {
  return event >= plan_period || period != plan_period || !match.expected ||
         !order.on_birth(expected, event, match.position);
}

class CompiledPlan {
 public:
  // `extent_of(size)` gives the bytes an object of `size` occupies (the heap's extent size). Returns false
  // with *error when the plan does not fit the profile (period, unknown tags).
  using ExtentOf = uint64_t (*)(uint64_t size);
  bool compile(const Plan& plan, const ProfileIndex& index, ExtentOf extent_of, std::string* error);

  uint32_t period() const { return period_; }
  const std::string& policy() const { return policy_; }
  uint64_t budget_bytes() const { return budget_bytes_; }
  // Events and phases at or past the period have nothing (0, empty).
  uint64_t expected_tag(uint32_t event) const { return event < period_ ? expected_tag_[event] : 0; }
  std::span<const uint64_t> expected_tags() const { return expected_tag_; }
  std::span<const PlannedMove> moves_at(uint32_t event) const {
    return event < period_ ? std::span<const PlannedMove>(moves_[event]) : std::span<const PlannedMove>();
  }
  std::span<const FastUse> fast_uses(uint32_t phase) const {
    return phase < period_ ? std::span<const FastUse>(fast_uses_[phase]) : std::span<const FastUse>();
  }
  // nullptr for a tag the plan does not know.
  const PlannedObject* object(uint64_t tag) const;
  // The birth event of the step-local object of this tag; kNoPosition for a persistent or unknown one.
  uint32_t position_of(uint64_t tag) const {
    const PlannedObject* o = object(tag);
    return o != nullptr && !o->persistent ? o->birth_event : kNoPosition;
  }
  const std::unordered_map<uint64_t, PlannedObject>& objects() const { return objects_; }
  uint64_t planned_migrated_bytes_per_step() const { return migrated_bytes_; }

 private:
  uint32_t period_ = 0;
  std::string policy_;
  uint64_t budget_bytes_ = 0;
  uint64_t migrated_bytes_ = 0;
  std::vector<uint64_t> expected_tag_;
  std::vector<std::vector<PlannedMove>> moves_;
  std::vector<std::vector<FastUse>> fast_uses_;
  std::unordered_map<uint64_t, PlannedObject> objects_;
};

}  // namespace sentinel::manage
