// The timeline writer's delta records, read back by the timeline reader, give at every recorded phase
// exactly the live objects and tiers the executor had then (what the version-1 writer listed in full), and
// they write far fewer tags than full listings would.
#include "manage/timeline_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <sstream>

#include "plan/planner.h"
#include "plan/synthetic_profile.h"
#include "plan/timeline.h"

namespace sentinel::manage {
namespace {

uint64_t same(uint64_t size) { return size; }

// Accepts every move and ends them one at a time when the test says so; every fifth one fails.
class QueueSink : public MoveSink {
 public:
  bool request_move(ObjectRef ref, uint64_t, Tier to) override {
    queue.push_back({ref, to});
    return true;
  }
  void complete_oldest(PlanExecutor& ex) {
    if (queue.empty()) return;
    const auto [ref, to] = queue.front();
    queue.pop_front();
    ex.on_move_done(ref, to, ++ended % 5 != 0);
  }
  std::deque<std::pair<ObjectRef, Tier>> queue;
  uint64_t ended = 0;
};

using Snapshot = ExecutedStep::PhaseState;

void sort_state(Snapshot* s) {
  std::sort(s->fast.begin(), s->fast.end());
  std::sort(s->slow.begin(), s->slow.end());
  std::sort(s->moving.begin(), s->moving.end());
}

// Passes everything on to the writer and keeps what the executor had live at each recorded phase.
class CheckingObserver : public ExecutionObserver {
 public:
  explicit CheckingObserver(TimelineWriter* writer) : writer_(writer) {}
  void attach(const PlanExecutor* ex) { ex_ = ex; }
  void on_step_begin(int64_t step, bool managed) override {
    writer_->on_step_begin(step, managed);
    recording_ = managed && writer_->steps_written() > recorded_steps_;
    recorded_steps_ = writer_->steps_written();
  }
  void on_phase_begin(int64_t step, uint32_t phase) override {
    writer_->on_phase_begin(step, phase);
    if (!recording_) return;
    Snapshot s;
    ex_->for_each_live([&](ObjectRef, uint64_t tag, uint64_t, Tier tier, bool moving) {
      (moving ? s.moving : tier == Tier::kFast ? s.fast : s.slow).push_back(tag);
    });
    sort_state(&s);
    expected[{step, phase}] = s;
    tags_live += s.fast.size() + s.slow.size() + s.moving.size();
  }
  void on_move_issued(int64_t step, uint32_t phase, uint64_t tag, Tier to) override {
    writer_->on_move_issued(step, phase, tag, to);
  }
  void on_move_finished(int64_t step, uint32_t phase, uint64_t tag, Tier to, bool moved) override {
    writer_->on_move_finished(step, phase, tag, to, moved);
  }
  void on_deviation(int64_t step, uint32_t event) override { writer_->on_deviation(step, event); }
  void on_object_changed(ObjectRef ref, uint64_t tag, bool live, Tier tier, bool moving) override {
    writer_->on_object_changed(ref, tag, live, tier, moving);
  }

  std::map<std::pair<int64_t, uint32_t>, Snapshot> expected;
  uint64_t tags_live = 0;  // what full listings at every recorded phase would have written

 private:
  TimelineWriter* writer_;
  const PlanExecutor* ex_ = nullptr;
  bool recording_ = false;
  uint32_t recorded_steps_ = 0;
};

uint64_t count(const std::string& text, const std::string& what) {
  uint64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TimelineWriter, DeltaRecordsReadBackAsTheExecutorsStateAtEveryPhase) {
  DnnConfig dnn;
  dnn.layers = 6;
  dnn.width = 512;
  dnn.batch = 512;
  const StepProfile profile = dnn_training_profile(dnn);
  ProfileIndex index;
  std::string error;
  ASSERT_TRUE(index.build(profile, &error)) << error;
  MemorySystem mem;
  ASSERT_TRUE(memory_system_preset("cxl", &mem, &error));
  mem.fault_ns_per_byte = 0;  // a plan with moves (with the fast pool's fault cost it is static)
  PlannerConfig config;
  config.budget_fraction = 0.2;
  Plan plan;
  ASSERT_TRUE(plan_sentinel(index, mem, config, &plan, &error)) << error;
  auto cp = std::make_shared<CompiledPlan>();
  ASSERT_TRUE(cp->compile(plan, index, same, &error)) << error;

  std::ostringstream text;
  TimelineWriter writer(&text, 3);
  CheckingObserver observer(&writer);
  QueueSink sink;
  PlanExecutor ex(&sink, &observer);
  writer.attach(&ex);
  observer.attach(&ex);
  writer.header(index.period(), plan.policy, 0);
  ex.start(cp, 1);

  const uint32_t period = index.period();
  std::map<uint32_t, ObjectRef> live;  // object index -> its instance
  uint32_t next_slot = 1;
  auto born = [&](uint32_t obj, int64_t step, uint32_t event) {
    const ObjectView& o = index.object(obj);
    const ObjectRef ref{next_slot++, 1};
    live[obj] = ref;
    ex.on_alloc(ref, o.tag, o.size, plan.birth(o.tag), step, event, period);
  };
  for (uint32_t i = 0; i < index.objects().size(); ++i) {
    if (index.object(i).cyclic) born(i, -1, 0);
  }
  for (int64_t step = 0; step < 5; ++step) {
    for (uint32_t k = 0; k < period; ++k) {
      if ((k + step) % 2 == 0) sink.complete_oldest(ex);  // moves end late, some in the next step
      for (uint32_t obj : index.deaths_at(k)) {
        auto it = live.find(obj);
        if (it == live.end()) continue;
        ex.on_free(it->second);
        live.erase(it);
      }
      if (index.births_at(k).empty()) ex.on_alloc(ObjectRef{next_slot++, 1}, 0xdead0000u + k, 0, Tier::kSlow, step, k, period);
      for (uint32_t obj : index.births_at(k)) born(obj, step, k);
    }
  }
  ASSERT_GT(ex.stats().moves_issued, 0u);
  ASSERT_GT(ex.stats().moves_failed, 0u);

  std::istringstream in(text.str());
  ExecutedTimeline t;
  ASSERT_TRUE(parse_timeline(in, &t, &error)) << error;
  ASSERT_EQ(t.steps.size(), 3u);
  ASSERT_EQ(observer.expected.size(), 3u * period);
  for (const ExecutedStep& s : t.steps) {
    ASSERT_EQ(s.phases.size(), period);
    for (const auto& [phase, state] : s.phases) {
      Snapshot got = state;
      sort_state(&got);
      const Snapshot& want = observer.expected.at({s.step, phase});
      EXPECT_EQ(got.fast, want.fast) << "step " << s.step << " phase " << phase;
      EXPECT_EQ(got.slow, want.slow) << "step " << s.step << " phase " << phase;
      EXPECT_EQ(got.moving, want.moving) << "step " << s.step << " phase " << phase;
    }
  }
  // One key frame per step; the deltas list only what changed.
  EXPECT_EQ(count(text.str(), "\"delta\":true"), 3u * (period - 1));
  const uint64_t tags_written = count(text.str(), "\"0x") - count(text.str(), "\"type\":\"move\"");
  EXPECT_LT(tags_written * 3, observer.tags_live) << text.str();
}

TEST(TimelineWriter, NothingIsWrittenOutsideRecordedSteps) {
  std::ostringstream text;
  TimelineWriter writer(&text, 1);
  writer.on_step_begin(0, false);
  writer.on_object_changed(ObjectRef{1, 1}, 0xa, true, Tier::kFast, false);
  writer.on_phase_begin(0, 0);
  EXPECT_EQ(text.str(), "");
}

}  // namespace
}  // namespace sentinel::manage
