#include "core/step_tracker.h"
#include "recorded_trace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sentinel {
namespace {

using testing::load_trace;
using testing::TraceEvent;

struct Reading {
  int64_t step;
  uint32_t event;
  uint32_t period;
};

// Feeds a trace to a tracker, searching every `cadence` events as the service thread would (the search
// lags up to cadence - 1 events behind the clock), and to a detector synchronously. Whenever the tracker
// has adopted every structure the detector has locked or switched to so far, both clocks must read the
// same; at the end, after finish(), they must agree on everything.
void expect_same_clock(const std::vector<TraceEvent>& trace, uint32_t cadence) {
  auto tracker = std::make_unique<StepTracker>();
  auto sync = std::make_unique<StepDetector>();
  SpinLock clock_lock;
  uint64_t changes = 0, last_lock_event = 0, compared = 0;
  bool was_locked = false;
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceEvent& e = trace[i];
    if (e.mark_before) {
      sync->mark_step();
      SpinGuard g(clock_lock);
      tracker->mark_step();
    }
    sync->observe(e.site, e.objects, e.bytes, e.size, e.small_before);
    if (!sync->explicit_marks() && sync->locked() && (!was_locked || sync->lock_event() != last_lock_event)) {
      ++changes;
      was_locked = true;
      last_lock_event = sync->lock_event();
    }
    Reading r;
    {
      SpinGuard g(clock_lock);
      bool due = false;
      tracker->observe(e.site, e.objects, e.bytes, e.size, e.small_before, &due);
      r = Reading{tracker->clock().step_index(), tracker->clock().event_in_step(), tracker->clock().period()};
    }
    if (tracker->adoptions() == changes) {
      ++compared;
      ASSERT_EQ(r.step, sync->step_index()) << "event " << i << " cadence " << cadence;
      ASSERT_EQ(r.event, sync->event_in_step()) << "event " << i << " cadence " << cadence;
      ASSERT_EQ(r.period, sync->period()) << "event " << i << " cadence " << cadence;
    }
    if ((i + 1) % cadence == 0) tracker->search(clock_lock);
  }
  tracker->finish(clock_lock);
  sync->finish();
  EXPECT_EQ(tracker->adoptions(), changes);
  const StepSummary s = tracker->summary();
  EXPECT_EQ(s.period, sync->period());
  EXPECT_EQ(s.complete_steps, sync->complete_steps());
  EXPECT_EQ(s.relocks, sync->relocks());
  EXPECT_EQ(s.locked, sync->locked());
  EXPECT_EQ(s.last_step_objects, sync->last_step_objects());
  EXPECT_EQ(tracker->dropped_events(), 0u);
  // Most events are compared: the lag after each structure change is at most one cadence.
  EXPECT_GE(compared + changes * cadence, trace.size()) << "cadence " << cadence;
}

class StepTrackerRecorded : public ::testing::TestWithParam<const char*> {};

TEST_P(StepTrackerRecorded, ClockInForceReadsAsTheDetectorOnceItHasAdopted) {
  const std::vector<TraceEvent> trace = load_trace(GetParam());
  ASSERT_FALSE(trace.empty());
  for (uint32_t cadence : {1u, 7u, 64u, 1000u}) expect_same_clock(trace, cadence);
}

INSTANTIATE_TEST_SUITE_P(Traces, StepTrackerRecorded,
                         ::testing::Values("mlp_6steps.trace", "lstm_6steps.trace", "gru_lm_16k_12steps.trace",
                                           "mlp_b8_16k_60steps.trace", "cnn_ckpt_every10_60steps.trace",
                                           "mlp_accum4_eval2_sgd_12steps.trace", "lstm_varlen_12steps.trace"));

TEST(StepTracker, MarksAreReplayedWithTheEventTheyPrecede) {
  // A recorded run whose program begins to mark its steps half-way: the detector has locked by then,
  // and the marks take over (in the tracker too, whatever the search's lag).
  std::vector<TraceEvent> trace = load_trace("cnn_6steps.trace");
  ASSERT_FALSE(trace.empty());
  for (size_t i = trace.size() / 2; i < trace.size(); i += 50) trace[i].mark_before = true;
  for (uint32_t cadence : {1u, 30u, 1000u}) expect_same_clock(trace, cadence);
}

// The search runs once, late: the tracker adopts the structure in the middle of a step. The occurrence
// numbers of that step's remaining events (from which the runtime makes tags) are those the same
// positions get in the next step, as if the step had been known from its start.
TEST(StepTracker, TheTagsOfTheStepInProgressAreCountedAgainAtAdoption) {
  const std::vector<TraceEvent> trace = load_trace("mlp_6steps.trace");
  ASSERT_GT(trace.size(), 300u);
  // The detector switches to the whole step (67 events) at event 315, its step 3 begun at 314.
  for (size_t search_at : {330u, 350u, 370u}) {
    auto tracker = std::make_unique<StepTracker>();
    SpinLock clock_lock;
    std::vector<std::vector<int64_t>> occurrence_at;  // [step][event in step]
    int64_t adopted_in = -1;
    uint32_t adopted_at = 0;
    for (size_t i = 0; i < trace.size(); ++i) {
      const TraceEvent& e = trace[i];
      SpinGuard g(clock_lock);
      bool due = false;
      tracker->observe(e.site, e.objects, e.bytes, e.size, e.small_before, &due);
      const uint32_t occurrence = tracker->next_occurrence(e.site);
      const int64_t step = tracker->clock().step_index();
      const uint32_t event = tracker->clock().event_in_step();
      if (step >= 0) {
        if (occurrence_at.size() <= static_cast<size_t>(step)) occurrence_at.resize(step + 1);
        auto& row = occurrence_at[step];
        if (row.size() <= event) row.resize(event + 1, -1);
        row[event] = occurrence;
      }
      if (i + 1 == search_at) {
        clock_lock.unlock();
        tracker->search(clock_lock);
        clock_lock.lock();
        ASSERT_GE(tracker->adoptions(), 1u) << "search at " << search_at;
        adopted_in = tracker->clock().step_index();
        adopted_at = tracker->clock().event_in_step();
      }
    }
    ASSERT_GE(adopted_in, 0);
    ASSERT_GT(adopted_at, 0u) << "the adoption should land inside a step";
    ASSERT_GT(occurrence_at.size(), static_cast<size_t>(adopted_in + 1));
    const auto& now = occurrence_at[adopted_in];
    const auto& later = occurrence_at[adopted_in + 1];
    size_t checked = 0;
    for (size_t k = adopted_at + 1; k < now.size() && k < later.size(); ++k, ++checked) {
      EXPECT_EQ(now[k], later[k]) << "search at " << search_at << ", event " << k << " of step " << adopted_in;
    }
    EXPECT_GT(checked, 10u);
  }
}

// Threads allocate (under one clock lock, as the runtime does) while a search thread searches and a
// reader reads the summary; ThreadSanitizer checks the hand-offs (scripts/sanitizers.sh). At the end the
// clock agrees with a detector fed the events in the order they took the lock.
TEST(StepTracker, ConcurrentProducersSearchAndReaders) {
  const std::vector<TraceEvent> trace = load_trace("cnn_6steps.trace");
  auto tracker = std::make_unique<StepTracker>();
  SpinLock clock_lock;
  std::vector<TraceEvent> order;
  order.reserve(trace.size() * 4);
  std::atomic<size_t> next{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> summaries{0};
  auto producer = [&] {
    for (size_t i; (i = next.fetch_add(1)) < trace.size() * 4;) {
      const TraceEvent& e = trace[i % trace.size()];
      SpinGuard g(clock_lock);
      bool due = false;
      tracker->observe(e.site, e.objects, e.bytes, e.size, e.small_before, &due);
      tracker->next_occurrence(e.site);
      order.push_back(e);
    }
  };
  std::thread search([&] {
    while (!done.load()) tracker->search(clock_lock);
  });
  // The reader reads until the producers are done and it has read at least one summary with events in it
  // (on a busy machine, or under TSan, it may not run at all before the producers end).
  std::thread reader([&] {
    while (!done.load() || summaries.load() == 0) {
      SpinGuard g(clock_lock);
      if (tracker->summary().events > 0) summaries.fetch_add(1);
    }
  });
  std::vector<std::thread> producers;
  for (int k = 0; k < 4; ++k) producers.emplace_back(producer);
  for (auto& t : producers) t.join();
  done.store(true);
  search.join();
  reader.join();
  tracker->finish(clock_lock);
  auto sync = std::make_unique<StepDetector>();
  for (const TraceEvent& e : order) sync->observe(e.site, e.objects, e.bytes, e.size, e.small_before);
  sync->finish();
  const StepSummary s = tracker->summary();
  EXPECT_EQ(s.events, order.size());
  if (tracker->dropped_events() == 0) {
    EXPECT_EQ(s.complete_steps, sync->complete_steps());
    EXPECT_EQ(s.period, sync->period());
    EXPECT_EQ(s.relocks, sync->relocks());
  }
}

}  // namespace
}  // namespace sentinel
