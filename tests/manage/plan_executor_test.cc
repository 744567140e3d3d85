#include "manage/plan_executor.h"

#include <gtest/gtest.h>

#include <memory>

#include "fake_sink.h"
#include "test_profiles.h"

namespace sentinel::manage {
namespace {

using test::FakeSink;
uint64_t same(uint64_t size) { return size; }

constexpr uint64_t kW = 0x10, kA = 0x20, kB = 0x30, kC = 0x40;

// Period 4. W persistent (1000 bytes) used in phases 0 and 3; A born at 0 (used 0, 3, dies 3);
// B born at 1 (used 1, 2, dies 2); C born at 2 (used 2, dies 3).
class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(index_.build(sentinel::test::make_profile(
                                 4, 1000,
                                 {sentinel::test::persistent(kW, 1000, 4, {0, 3}), sentinel::test::object(kA, 4000, 0, 3, {0, 3}),
                                  sentinel::test::object(kB, 2000, 1, 2, {1, 2}), sentinel::test::object(kC, 500, 2, 3, {2})}),
                             &error))
        << error;
    plan_.policy = "test";
    plan_.period = 4;
    plan_.events.assign(4, {});
    plan_.birth_tier = {{kW, Tier::kFast}, {kA, Tier::kFast}, {kB, Tier::kFast}, {kC, Tier::kFast}};
    plan_.events[1] = {{kA, MoveKind::kEvict}};     // A's gap: 1..2
    plan_.events[2] = {{kA, MoveKind::kPrefetch}};  // back for phase 3
  }
  std::shared_ptr<const CompiledPlan> compile() {
    auto cp = std::make_shared<CompiledPlan>();
    std::string error;
    EXPECT_TRUE(cp->compile(plan_, index_, same, &error)) << error;
    return cp;
  }
  // Runs the allocations and frees of one step as the profile has them; births on their planned tier.
  void run_step(PlanExecutor& ex, FakeSink& sink, int64_t step, uint32_t slot_base, bool complete_moves) {
    const uint64_t tags[4] = {kA, kB, kC, 0};
    const uint64_t sizes[4] = {4000, 2000, 500, 0};
    for (uint32_t e = 0; e < 3; ++e) {
      // Deaths first: B dies at the end of phase 2 (before event 3 there is no event: freed at step end).
      ASSERT_TRUE(sink.birth_fast(sizes[e]));
      ex.on_alloc(ObjectRef{slot_base + e, 1}, tags[e], sizes[e], Tier::kFast, step, e, 4);
      if (complete_moves)
        while (!sink.queue.empty()) sink.complete_next(ex);
    }
    for (uint32_t e = 0; e < 3; ++e) {
      Tier t;
      bool moving;
      if (!ex.tier_of(tags[e], &t, &moving)) continue;
      if (t == Tier::kFast && !moving) sink.free_fast(sizes[e]);
      ex.on_free(ObjectRef{slot_base + e, 1});
    }
  }
  ProfileIndex index_;
  Plan plan_;
};

TEST_F(ExecutorTest, IssuesThePlansMovesInOrderAtTheirEvents) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{1, 1}, kW, 1000, Tier::kFast, -1, 0, 0);
  ASSERT_TRUE(sink.birth_fast(1000));
  run_step(ex, sink, 0, 10, true);
  ASSERT_EQ(sink.issued.size(), 2u);
  EXPECT_EQ(sink.issued[0].ref.slot, 10u);
  EXPECT_EQ(sink.issued[0].to, Tier::kSlow);
  EXPECT_EQ(sink.issued[1].to, Tier::kFast);
  EXPECT_EQ(ex.stats().moves_done, 2u);
  EXPECT_EQ(ex.stats().bytes_migrated, 8000u);
  run_step(ex, sink, 1, 20, true);  // closes step 0
  EXPECT_EQ(ex.stats().managed_steps, 1u);
  EXPECT_EQ(ex.stats().fallback_steps, 0u);
}

TEST_F(ExecutorTest, NoMovesBeforeTheFirstManagedStep) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 5);
  run_step(ex, sink, 4, 10, true);
  EXPECT_TRUE(sink.issued.empty());
  run_step(ex, sink, 5, 20, true);
  EXPECT_EQ(sink.issued.size(), 2u);
}

TEST_F(ExecutorTest, ARefusedPrefetchWaitsForTheRoomAndKeepsTheOrder) {
  // Budget 4600: A (4000) + B (2000) cannot both be fast; the plan's births at 0 and 1 overflow, so B is
  // born slow here; A's eviction at 1 then its prefetch at 2 must wait for the eviction to complete.
  FakeSink sink(4600);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ASSERT_TRUE(sink.birth_fast(4000));
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  ex.on_alloc(ObjectRef{11, 1}, kB, 2000, Tier::kSlow, 0, 1, 4);  // evict A issued
  ASSERT_EQ(sink.issued.size(), 1u);
  ex.on_alloc(ObjectRef{12, 1}, kC, 500, Tier::kSlow, 0, 2, 4);   // prefetch A: A is still moving away
  EXPECT_EQ(sink.issued.size(), 1u);
  EXPECT_EQ(ex.stats().moves_deferred, 1u);
  sink.complete_next(ex);  // the eviction ends: the waiting prefetch goes out
  ASSERT_EQ(sink.issued.size(), 2u);
  EXPECT_EQ(sink.issued[1].to, Tier::kFast);
  EXPECT_LE(sink.peak_fast, 4600u);
}

// The runtime takes a prefetch's fast memory when the move starts (preload/migration.cc); one that finds
// no room then is refused there and reported so. It waits again, first in line, is not counted as a
// failure, and goes out again at the next object event (not on its own refusal, which would ask again at
// once and forever).
TEST_F(ExecutorTest, AMoveRefusedWhenItWasToStartWaitsAgainAndIsNotAFailure) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ASSERT_TRUE(sink.birth_fast(4000));
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  ex.on_alloc(ObjectRef{11, 1}, kB, 2000, Tier::kFast, 0, 1, 4);  // A's eviction
  sink.complete_next(ex);
  ex.on_alloc(ObjectRef{12, 1}, kC, 500, Tier::kFast, 0, 2, 4);   // A's prefetch
  ASSERT_EQ(sink.issued.size(), 2u);
  const test::RequestedMove prefetch = sink.queue.front();
  sink.queue.pop_front();
  sink.fast -= prefetch.bytes;  // the sink's room comes back: the move never started
  ex.on_move_done(prefetch.ref, prefetch.to, false, /*refused=*/true);
  EXPECT_EQ(sink.issued.size(), 2u);  // not asked again on its own refusal
  EXPECT_EQ(ex.stats().moves_failed, 0u);
  EXPECT_EQ(ex.stats().moves_deferred, 1u);
  Tier t;
  bool moving = true;
  ASSERT_TRUE(ex.tier_of(kA, &t, &moving));
  EXPECT_FALSE(moving);
  EXPECT_EQ(t, Tier::kSlow);
  ex.on_free(ObjectRef{11, 1});  // the next object event: it goes out again
  ASSERT_EQ(sink.issued.size(), 3u);
  EXPECT_EQ(sink.issued[2].to, Tier::kFast);
  EXPECT_EQ(sink.issued[2].ref.slot, 10u);
}

TEST_F(ExecutorTest, BudgetHoldsAtEveryInstantWhateverTheSinkRefuses) {
  FakeSink sink(4500);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  for (int64_t step = 0; step < 6; ++step) {
    const uint64_t tags[3] = {kA, kB, kC};
    const uint64_t sizes[3] = {4000, 2000, 500};
    for (uint32_t e = 0; e < 3; ++e) {
      const bool fast = sink.birth_fast(sizes[e]);
      ex.on_alloc(ObjectRef{100 + e, static_cast<uint32_t>(step + 1)}, tags[e], sizes[e],
                  fast ? Tier::kFast : Tier::kSlow, step, e, 4);
      if (!sink.queue.empty() && e % 2 == 0) sink.complete_next(ex);
      EXPECT_LE(sink.fast, 4500u);
    }
    while (!sink.queue.empty()) sink.complete_next(ex);
    for (uint32_t e = 0; e < 3; ++e) {
      Tier t;
      bool moving;
      ASSERT_TRUE(ex.tier_of(tags[e], &t, &moving));
      if (t == Tier::kFast) sink.free_fast(sizes[e]);
      ex.on_free(ObjectRef{100 + e, static_cast<uint32_t>(step + 1)});
    }
    EXPECT_EQ(sink.fast, 0u);
  }
  EXPECT_LE(sink.peak_fast, 4500u);
}

TEST_F(ExecutorTest, APrefetchNotDoneWhenItsPhaseBeginsIsLate) {
  // A's prefetch is issued at event 2 for phase 3; the program's next event after 2 is event 0 of the
  // next step, so make phase 3 have an event: a 5-phase variant with an object born at 3.
  std::string error;
  ASSERT_TRUE(index_.build(sentinel::test::make_profile(
                               5, 1000,
                               {sentinel::test::object(kA, 4000, 0, 3, {0, 3}), sentinel::test::object(kB, 2000, 1, 2, {1, 2}),
                                sentinel::test::object(kC, 500, 2, 3, {2}), sentinel::test::object(0x50, 100, 3, 4, {3})}),
                           &error))
      << error;
  plan_.period = 5;
  plan_.events.assign(5, {});
  plan_.events[1] = {{kA, MoveKind::kEvict}};
  plan_.events[2] = {{kA, MoveKind::kPrefetch}};
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 5);
  ex.on_alloc(ObjectRef{11, 1}, kB, 2000, Tier::kFast, 0, 1, 5);
  sink.complete_next(ex);  // eviction done
  ex.on_alloc(ObjectRef{12, 1}, kC, 500, Tier::kFast, 0, 2, 5);
  ex.on_alloc(ObjectRef{13, 1}, 0x50, 100, Tier::kFast, 0, 3, 5);  // prefetch still queued: late
  EXPECT_EQ(ex.stats().late_prefetches, 1u);
  EXPECT_EQ(ex.take_late_tags(), std::vector<uint64_t>{kA});
  EXPECT_TRUE(ex.take_late_tags().empty());
  // Fidelity: A was planned fast and used in phases 0 and 3; on fast in 0, not in 3. B in 1 and C in 2 were.
  // (The object born at 3 has no planned tier: born slow, not a fast use.)
  EXPECT_EQ(ex.stats().fast_use_bytes, 4000u + 2000u + 2000u + 500u + 4000u);
  EXPECT_EQ(ex.stats().fast_use_bytes_on_fast, 4000u + 2000u + 2000u + 500u);
}

TEST_F(ExecutorTest, ADeviatingStepFallsBackAndTheNextIsManagedAgain) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  ex.on_alloc(ObjectRef{11, 1}, 0xbad, 2000, Tier::kFast, 0, 1, 4);  // an evaluation pass, say
  ex.on_alloc(ObjectRef{12, 1}, kC, 500, Tier::kFast, 0, 2, 4);
  EXPECT_TRUE(sink.issued.empty());  // A's eviction at event 1 was not issued
  ex.on_free(ObjectRef{10, 1});
  ex.on_free(ObjectRef{11, 1});
  ex.on_free(ObjectRef{12, 1});
  run_step(ex, sink, 1, 20, true);
  run_step(ex, sink, 2, 30, true);
  EXPECT_EQ(ex.stats().fallback_steps, 1u);
  EXPECT_EQ(ex.stats().managed_steps, 1u);
  EXPECT_EQ(sink.issued.size(), 4u);
}

// The detector counts events past the period while it waits for a step that runs long to end.
TEST_F(ExecutorTest, AStepLongerThanThePlanLeavesIt) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  for (uint32_t e = 1; e < 9; ++e) ex.on_alloc(ObjectRef{10 + e, 1}, 0x900 + e, 100, Tier::kFast, 0, 4 + e, 4);
  EXPECT_TRUE(ex.step_deviated());
  run_step(ex, sink, 1, 30, true);
  EXPECT_EQ(ex.stats().fallback_steps, 1u);
}

// A false start (an evaluation batch allocated from the input's call-site) keeps the step index; the real
// step then begins at event 0 under that index and is managed from the start.
TEST_F(ExecutorTest, AStepBegunAgainUnderTheSameIndexStartsOver) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  ex.on_alloc(ObjectRef{11, 1}, 0xe1, 2000, Tier::kFast, 0, 1, 4);  // not the step: deviates
  EXPECT_TRUE(ex.step_deviated());
  ex.on_free(ObjectRef{10, 1});
  ex.on_free(ObjectRef{11, 1});
  run_step(ex, sink, 0, 20, true);  // the real step, same index
  EXPECT_FALSE(ex.step_deviated());
  EXPECT_EQ(sink.issued.size(), 2u);
  run_step(ex, sink, 1, 30, true);
  EXPECT_EQ(ex.stats().managed_steps, 1u);
  EXPECT_EQ(ex.stats().fallback_steps, 0u);
}

TEST_F(ExecutorTest, PersistentObjectsAreBroughtToTheirPlannedTierAtStepStart) {
  plan_.birth_tier[kW] = Tier::kSlow;
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.on_alloc(ObjectRef{1, 1}, kW, 1000, Tier::kFast, -1, 0, 0);  // born before any plan, first-touch fast
  ex.start(compile(), 3);
  run_step(ex, sink, 3, 10, false);
  ASSERT_FALSE(sink.issued.empty());
  EXPECT_EQ(sink.issued[0].ref.slot, 1u);
  EXPECT_EQ(sink.issued[0].to, Tier::kSlow);
  EXPECT_EQ(ex.stats().reconcile_moves, 1u);
}

TEST_F(ExecutorTest, AFirstPlanMovesThePersistentObjectsWhenItStartsAheadOfItsFirstStep) {
  // W was born fast before any plan; the plan wants it slow. Its eviction is issued by start() itself, so it
  // can give its fast memory back before the births of step 3 (which follow the plan from its first event).
  plan_.birth_tier[kW] = Tier::kSlow;
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.on_alloc(ObjectRef{1, 1}, kW, 1000, Tier::kFast, -1, 0, 0);
  ex.start(compile(), 3);
  ASSERT_EQ(sink.issued.size(), 1u);
  EXPECT_EQ(sink.issued[0].ref.slot, 1u);
  EXPECT_EQ(sink.issued[0].to, Tier::kSlow);
  sink.complete_next(ex);
  run_step(ex, sink, 3, 10, false);  // at the step's start W is already where the plan wants it
  EXPECT_EQ(ex.stats().reconcile_moves, 1u);
  EXPECT_EQ(sink.issued[0].ref.slot, 1u);
}

TEST_F(ExecutorTest, AReplanMovesNothingBeforeItsFirstStep) {
  // A plan in force keeps the step in progress: the next plan's step-start tiers wait for its first step.
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.on_alloc(ObjectRef{1, 1}, kW, 1000, Tier::kFast, -1, 0, 0);
  ex.start(compile(), 0);
  run_step(ex, sink, 0, 10, true);
  const size_t issued = sink.issued.size();
  plan_.birth_tier[kW] = Tier::kSlow;
  ex.start(compile(), 2);
  EXPECT_EQ(sink.issued.size(), issued);
  run_step(ex, sink, 1, 20, true);  // still the first plan: W stays fast
  EXPECT_EQ(ex.stats().reconcile_moves, 0u);
  run_step(ex, sink, 2, 30, false);
  EXPECT_EQ(ex.stats().reconcile_moves, 1u);
}

// A step-start prefetch of a persistent object with no room is left for the next step's start. Waiting, it
// was asked again at every event, and the plan's own moves queued behind it (first in, first out) waited
// with it for the rest of the step (googlenet: two such prefetches asked 1,500 times a step).
TEST_F(ExecutorTest, AStepStartPrefetchWithNoRoomIsLeftForTheNextStepAndHoldsNothingBack) {
  FakeSink sink(4000);
  PlanExecutor ex(&sink);
  ex.on_alloc(ObjectRef{1, 1}, kW, 1000, Tier::kSlow, -1, 0, 0);  // born slow before any plan; planned fast
  ASSERT_TRUE(sink.birth_fast(4000));                              // A's room, taken before the plan
  ex.start(compile(), 0);
  EXPECT_TRUE(sink.issued.empty());
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);  // step 0: W asked again, no room
  ex.on_alloc(ObjectRef{11, 1}, kB, 2000, Tier::kSlow, 0, 1, 4);  // the plan's eviction of A
  ASSERT_EQ(sink.issued.size(), 1u);
  EXPECT_EQ(sink.issued[0].ref.slot, 10u);
  EXPECT_EQ(sink.issued[0].to, Tier::kSlow);
  EXPECT_EQ(ex.stats().moves_deferred, 0u);
  EXPECT_EQ(ex.stats().reconcile_prefetches_skipped, 2u);
  // Refused when it was to start (the runtime's room check): left too, not asked again in the step.
  sink.complete_next(ex);  // A is slow: room for W at the next step's start
  ex.on_free(ObjectRef{11, 1});
  ex.on_alloc(ObjectRef{20, 1}, kA, 4000, Tier::kSlow, 1, 0, 4);  // step 1: W's prefetch goes out
  ASSERT_EQ(sink.issued.size(), 2u);
  EXPECT_EQ(sink.issued[1].ref.slot, 1u);
  const test::RequestedMove w = sink.queue.back();
  sink.queue.pop_back();
  sink.fast -= w.bytes;
  ex.on_move_done(w.ref, w.to, false, /*refused=*/true);
  ex.on_alloc(ObjectRef{21, 1}, kB, 2000, Tier::kSlow, 1, 1, 4);
  EXPECT_EQ(ex.stats().reconcile_prefetches_skipped, 3u);
  size_t w_moves = 0;
  for (const test::RequestedMove& m : sink.issued) w_moves += m.ref.slot == 1u;
  EXPECT_EQ(w_moves, 1u);
}

TEST_F(ExecutorTest, AnObjectWhoseMovesKeepFailingIsNoLongerReconciled) {
  plan_.birth_tier[kW] = Tier::kSlow;
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.on_alloc(ObjectRef{1, 1}, kW, 1000, Tier::kFast, -1, 0, 0);
  ex.start(compile(), 0);
  for (int64_t step = 0; step < 5; ++step) {
    ex.on_alloc(ObjectRef{10, static_cast<uint32_t>(step + 1)}, kA, 4000, Tier::kFast, step, 0, 4);
    while (!sink.queue.empty()) sink.complete_next(ex, false);  // the kernel refuses every move
    ex.on_free(ObjectRef{10, static_cast<uint32_t>(step + 1)});
  }
  EXPECT_EQ(ex.stats().reconcile_moves, PlanExecutor::kMaxFailures);
  EXPECT_EQ(ex.stats().moves_failed, PlanExecutor::kMaxFailures);
}

TEST_F(ExecutorTest, MovesStillWaitingAtStepEndAreDropped) {
  FakeSink sink(1 << 20);
  sink.refuse_all = true;
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  ex.on_alloc(ObjectRef{11, 1}, kB, 2000, Tier::kFast, 0, 1, 4);  // A's eviction is refused: it waits
  EXPECT_EQ(ex.stats().moves_deferred, 1u);
  ex.on_alloc(ObjectRef{20, 2}, kA, 4000, Tier::kFast, 1, 0, 4);  // the next step begins
  EXPECT_EQ(ex.stats().moves_issued, 0u);
  EXPECT_EQ(ex.stats().moves_dropped, 1u);
}

TEST_F(ExecutorTest, AMoveBackCancelsAWaitingMove) {
  FakeSink sink(1 << 20);
  sink.refuse_all = true;
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  ex.on_alloc(ObjectRef{11, 1}, kB, 2000, Tier::kFast, 0, 1, 4);  // A's eviction waits
  ex.on_alloc(ObjectRef{12, 1}, kC, 500, Tier::kFast, 0, 2, 4);   // A's prefetch: A is fast already
  Tier t;
  ASSERT_TRUE(ex.intended_tier(kA, &t));
  EXPECT_EQ(t, Tier::kFast);
  ex.on_alloc(ObjectRef{20, 2}, kA, 4000, Tier::kFast, 1, 0, 4);
  EXPECT_EQ(ex.stats().moves_dropped, 0u);
}

// The program's last step has no next step to close it: finish() does, also when the program ends before the
// step's last events (the detector's step may begin inside the loop's iteration).
TEST_F(ExecutorTest, FinishClosesTheLastStep) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  for (uint32_t e = 0; e < 4; ++e) ex.on_alloc(ObjectRef{10 + e, 1}, e == 3 ? 0x77 : 0x20 + 0x10 * e, 100, Tier::kFast, 0, e, 4);
  ASSERT_FALSE(ex.step_deviated());
  ex.finish();
  EXPECT_EQ(ex.stats().managed_steps, 1u);
  ex.finish();  // nothing more to close
  EXPECT_EQ(ex.stats().managed_steps, 1u);

  // A program that ends two events into a step whose second birth has `second`'s tag.
  const auto ended_after_two_births = [&](uint32_t slot, uint64_t second, bool step_complete) {
    PlanExecutor cut(&sink);
    cut.start(compile(), 0);
    cut.on_alloc(ObjectRef{slot, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
    cut.on_alloc(ObjectRef{slot + 1, 1}, second, 2000, Tier::kFast, 0, 1, 4);
    cut.finish(step_complete);
    return cut.stats();
  };
  const ExecutorStats cut = ended_after_two_births(20, kB, true);
  EXPECT_EQ(cut.managed_steps, 1u);
  EXPECT_EQ(cut.fallback_steps, 0u);

  EXPECT_EQ(ended_after_two_births(30, 0xbad, true).fallback_steps, 1u);

  // The same, where the step clock found the stretch after the last step incomplete: not a training step
  // (an evaluation pass at the program's end, which begins as the step does), so neither managed nor fallback.
  const ExecutorStats tail = ended_after_two_births(40, 0xbad, false);
  EXPECT_EQ(tail.fallback_steps, 0u);
  EXPECT_EQ(tail.managed_steps, 0u);
  // Also when it followed the plan: the start of a step the program never finished (the optimizer's
  // allocations where the detector's step begins, after the last iteration's backward pass).
  const ExecutorStats started = ended_after_two_births(50, kB, false);
  EXPECT_EQ(started.fallback_steps, 0u);
  EXPECT_EQ(started.managed_steps, 0u);
}

// A step that went through every event of its plan and then allocates on before the next step begins (an
// evaluation pass after the optimizer's step: mlp_accum_eval.py) followed its plan: it counts as managed, and
// nothing more is issued in it. Before, it counted as a fallback step.
TEST_F(ExecutorTest, AStepThatGoesOnPastItsWholePlanIsManaged) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  for (uint32_t e = 0; e < 4; ++e) ex.on_alloc(ObjectRef{10 + e, 1}, e == 3 ? 0x77 : 0x20 + 0x10 * e, 100, Tier::kFast, 0, e, 4);
  const size_t issued = sink.issued.size();
  for (uint32_t e = 4; e < 9; ++e) ex.on_alloc(ObjectRef{10 + e, 1}, 0x900 + e, 100, Tier::kFast, 0, e, 4);
  EXPECT_FALSE(ex.step_deviated());
  EXPECT_EQ(sink.issued.size(), issued);
  ex.on_alloc(ObjectRef{30, 1}, kA, 4000, Tier::kFast, 1, 0, 4);  // the next step begins
  EXPECT_EQ(ex.stats().managed_steps, 1u);
  EXPECT_EQ(ex.stats().fallback_steps, 0u);
}

TEST_F(ExecutorTest, StopEndsManagement) {
  FakeSink sink(1 << 20);
  PlanExecutor ex(&sink);
  ex.start(compile(), 0);
  ex.on_alloc(ObjectRef{10, 1}, kA, 4000, Tier::kFast, 0, 0, 4);
  ex.stop();
  ex.on_alloc(ObjectRef{11, 1}, kB, 2000, Tier::kFast, 0, 1, 4);
  EXPECT_TRUE(sink.issued.empty());
  EXPECT_FALSE(ex.has_plan());
  EXPECT_EQ(ex.stats().fallback_steps, 1u);  // the step it stopped in did not follow the plan to its end
}

}  // namespace
}  // namespace sentinel::manage
