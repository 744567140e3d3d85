// PlanExecutor: carries a CompiledPlan out on the running program. It follows the object events of the
// program (allocations and frees, stamped with the step clock) and the completions of the moves it asked
// for, and at every event of a managed step issues the plan's evictions and prefetches through a MoveSink.
// It decides nothing about physical memory itself: the sink (the migration engine and the budget placer in
// the runtime, a fake in tests) queues a move or refuses it.
//
// Rules:
//  - Steps from `first_step` on are managed while the detector's period equals the plan's. A step whose
//    index comes back at event 0 (the detector's false start) starts over: what the false start did is
//    neither a managed nor a fallback step. A managed step
//    whose allocation at event k has another tag than the plan expects there leaves the plan: nothing more
//    is issued in that step (a fallback step; births are first-touch, see BirthGate) and the next step
//    starts over.
//  - At the start of every managed step, persistent objects that are not on their planned step-start tier
//    are moved there (evictions first): after a fallback step, a refused move or a failed one, the plan
//    catches up within one step. A plan started with none in force does this at once (start()). An object whose moves failed kMaxFailures times in a row is left where it
//    is (a full node, pages the kernel will not move): retrying every step would only burn the channel.
//  - Moves are issued in plan order, one channel, first in first out. A move the sink refuses (the fast
//    budget has no room yet), when it is issued or when it was to start, waits in a FIFO and is retried, in
//    order, when a move completes or at the next event; waiting moves are dropped at the end of the step.
//    Moves of objects that are not alive, already on the target tier or moving are no-ops.
//  - A prefetch is late when the object is not on the fast tier (by completed moves) at the start of the
//    phase of the access it serves; late tags are reported per step so the caller can plan them earlier.
//  - plan_fidelity = fast_use_bytes_on_fast / fast_use_bytes: over managed steps, the bytes of objects the
//    plan wants fast in a phase in which the profile saw them accessed (CompiledPlan::fast_uses), and the
//    share of those bytes that were on the fast tier when the phase began.
//
// Thread safety: none; one thread (the runtime's service thread) calls every method.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "manage/compiled_plan.h"

namespace sentinel::manage {

struct ObjectRef {
  uint32_t slot = 0;
  uint32_t generation = 0;
  uint64_t key() const { return (uint64_t{slot} << 32) | generation; }
};

class MoveSink {
 public:
  virtual ~MoveSink() = default;
  // Queues a move of the object to `to`; false when refused (budget, queue full, object not movable). Every
  // queued move is answered later by PlanExecutor::on_move_done.
  virtual bool request_move(ObjectRef ref, uint64_t bytes, Tier to) = 0;
};

// Receives what the executor did; a no-op by default (the runtime writes the timeline from it).
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  virtual void on_step_begin(int64_t /*step*/, bool /*managed*/) {}
  virtual void on_phase_begin(int64_t /*step*/, uint32_t /*phase*/) {}
  virtual void on_move_issued(int64_t /*step*/, uint32_t /*phase*/, uint64_t /*tag*/, Tier /*to*/) {}
  virtual void on_move_finished(int64_t /*step*/, uint32_t /*phase*/, uint64_t /*tag*/, Tier /*to*/, bool /*moved*/) {}
  virtual void on_deviation(int64_t /*step*/, uint32_t /*event*/) {}
  // A live object's state changed: born (live), freed (!live), a move issued (moving) or ended. `tier` is
  // where it is by completed moves.
  virtual void on_object_changed(ObjectRef /*ref*/, uint64_t /*tag*/, bool /*live*/, Tier /*tier*/, bool /*moving*/) {}
};

struct ExecutorStats {
  uint64_t managed_steps = 0;    // steps that followed the plan from their first event to their last
  uint64_t fallback_steps = 0;   // steps that left the plan (or began managed and deviated)
  uint64_t moves_issued = 0;     // moves the sink queued
  uint64_t moves_deferred = 0;   // refusals that were queued for a retry
  uint64_t moves_dropped = 0;    // still waiting at the end of their step
  uint64_t reconcile_moves = 0;  // step-start corrections of persistent objects
  // Step-start prefetches of persistent objects that found no room and were left for the next step's start
  // rather than waiting: a waiting move is asked again at every event and holds back every move behind it.
  uint64_t reconcile_prefetches_skipped = 0;
  uint64_t moves_done = 0, moves_failed = 0;
  uint64_t bytes_migrated = 0;   // completed moves
  uint64_t late_prefetches = 0;
  uint64_t fast_use_bytes = 0, fast_use_bytes_on_fast = 0;
  double fidelity() const {
    return fast_use_bytes == 0 ? 1.0 : static_cast<double>(fast_use_bytes_on_fast) / fast_use_bytes;
  }
};

class PlanExecutor {
 public:
  static constexpr uint32_t kMaxFailures = 2;

  explicit PlanExecutor(MoveSink* sink, ExecutionObserver* observer = nullptr);

  // Executes `plan` from step `first_step` on. A step already in progress keeps the plan it began with:
  // the new plan replaces it when step first_step (or a later one) begins. With no plan in force, the
  // persistent objects are moved to the new plan's step-start tiers at once (evictions first), ahead of
  // its first step: the program's births follow the plan from that step's first event, and a reconcile
  // issued only when the step's first event reached this thread raced them for the fast memory the
  // evictions give back (cnn in the guest at 20%: planned-fast births sent slow in the first managed
  // step, plan fidelity 0.80-0.86 over 3-4 managed steps; docs/managed-mode.md).
  void start(std::shared_ptr<const CompiledPlan> plan, int64_t first_step);
  // No plan any more, at once: nothing more is issued until start() (live objects are still followed).
  void stop();
  // The program ends: the step in progress is closed as any step is when the next one begins: managed when it
  // followed the plan up to the program's end (its last events may be missing: the detector's step may begin
  // inside the loop's iteration, and the last iteration has no next one), fallback when it left it, unless
  // the step clock found it incomplete (`step_complete` false): then it was not a training step (an
  // evaluation pass after the last one, which leaves the plan where its events differ from the step's) and
  // is counted as neither. Nothing is counted after this until the next step begins.
  void finish(bool step_complete = true);
  bool has_plan() const { return plan_ != nullptr || next_plan_ != nullptr; }
  const CompiledPlan* plan() const { return plan_.get(); }

  // An object was born on `tier` at step-clock (step, event) while the detector's period was `period`
  // (step < 0: before steps are known).
  void on_alloc(ObjectRef ref, uint64_t tag, uint64_t bytes, Tier tier, int64_t step, uint32_t event,
                uint32_t period);
  void on_free(ObjectRef ref);
  // The live object `key` (ObjectRef::key) is known by `tag` from now on: a persistent object that shared
  // its tag with others got one of its own (manage/twin_tags.h).
  void retag(uint64_t key, uint64_t tag);
  // A move the sink queued has ended (moved = the object is now on `to`). `refused`: the sink refused it
  // when it was to start (no room in the fast budget even after the moves ahead of it: the runtime takes
  // a prefetch's room then); it waits again, first in line, as a move refused when issued does, until the
  // next object event or completed move (not this one: that would ask again at once).
  void on_move_done(ObjectRef ref, Tier to, bool moved, bool refused = false);

  const ExecutorStats& stats() const { return stats_; }
  // Tags whose prefetch was late in managed steps since the last call.
  std::vector<uint64_t> take_late_tags();
  int64_t current_step() const { return step_; }
  bool step_managed() const { return step_managed_; }
  bool step_deviated() const { return step_deviated_; }
  // Whether the step in progress follows the plan no more: it deviated, or it went past the plan's whole
  // period (then it still counts as managed). The birth gate's step_left says the same.
  bool step_left_plan() const { return step_deviated_ || step_overran_; }
  // Where the executor believes the live object with this tag is (by completed moves); false if none.
  bool tier_of(uint64_t tag, Tier* tier, bool* moving) const;
  // Whether a move of the live object with this tag waits in the executor's queue (refused so far).
  bool move_waiting(uint64_t tag) const;
  // Whether any move waits (it is retried at every event).
  bool moves_waiting() const { return !waiting_.empty(); }
  // fn(ObjectRef, tag, bytes, tier, moving) for every live object, in no particular order.
  template <typename Fn>
  void for_each_live(Fn fn) const {
    for (const auto& [key, o] : live_) fn(o.ref, o.tag, o.bytes, o.tier, o.moving);
  }
  // The intended tier of a tag (its birth tier, changed by every move issued or waiting since): what the
  // plan asks for now, whether or not the copy has finished. False when the tag is not live.
  bool intended_tier(uint64_t tag, Tier* tier) const;

 private:
  struct Live {
    ObjectRef ref;
    uint64_t tag = 0;
    uint64_t bytes = 0;
    Tier tier = Tier::kSlow;
    bool moving = false;
    Tier moving_to = Tier::kSlow;
    uint32_t failures = 0;  // moves of this object that failed in a row
    bool reconciling = false;  // its move in flight is a step-start prefetch (a refusal skips it)
  };
  struct Waiting {
    uint64_t key = 0;
    Tier to = Tier::kSlow;
  };
  struct Awaited {
    uint64_t key = 0;
    uint64_t tag = 0;
    int64_t step = 0;
  };

  void begin_step(int64_t step, uint32_t period);
  void restart_step(uint32_t period);
  void end_step();
  void reconcile_persistent(const CompiledPlan& plan);
  // Issues a move unless it is a no-op; a refusal waits in `waiting_` (behind anything already waiting).
  void issue(Live& o, Tier to, bool reconcile);
  void retry_waiting();
  void check_late(uint32_t event);
  void measure_fidelity(uint32_t phase);

  MoveSink* sink_;
  ExecutionObserver* observer_;
  ExecutionObserver null_observer_;
  std::shared_ptr<const CompiledPlan> plan_;
  int64_t first_step_ = 0;
  std::shared_ptr<const CompiledPlan> next_plan_;  // takes over at next_first_step_
  int64_t next_first_step_ = 0;

  std::unordered_map<uint64_t, Live> live_;       // by ObjectRef::key()
  std::unordered_map<uint64_t, uint64_t> by_tag_;  // tag -> key of its newest live instance
  std::deque<Waiting> waiting_;
  std::vector<std::vector<Awaited>> awaited_;     // by need phase
  std::unordered_set<uint64_t> late_tags_;

  int64_t step_ = -1;
  uint32_t phase_ = 0;
  bool step_managed_ = false;
  bool step_deviated_ = false;
  // The step went through every event of the plan's period in order (the last one passed the rule), and
  // then past it (an evaluation pass or a checkpoint after the optimizer's step, before the next step
  // begins): the plan has nothing more for it, it issues nothing more, and it counts as managed.
  bool step_reached_end_ = false;
  bool step_overran_ = false;
  BirthOrder order_;  // this step's births of the plan's step-local objects (the deviation rule)
  ExecutorStats stats_;
};

}  // namespace sentinel::manage
