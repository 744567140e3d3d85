// A plan that keeps its budget in the cost model must be executable at run time: driven with the model's
// own timing (measured phase durations, one FIFO channel at the model's migration bandwidth), the executor
// and the runtime's budget accounting never refuse one of the plan's moves, never force a planned-fast birth
// to the slow tier, and never exceed the budget at any instant.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>

#include "manage/plan_executor.h"
#include "plan/cost_model.h"
#include "plan/planner.h"
#include "plan/synthetic_profile.h"

namespace sentinel::manage {
namespace {

uint64_t same(uint64_t size) { return size; }

// The runtime's accounting (an object in flight counts on both tiers) with the model's channel timing.
class TimedSink : public MoveSink {
 public:
  TimedSink(uint64_t budget, double bw_bytes_per_ns) : budget_(budget), bw_(bw_bytes_per_ns) {}

  bool request_move(ObjectRef ref, uint64_t bytes, Tier to) override {
    if (to == Tier::kFast) {
      if (fast + bytes > budget_) {
        ++refusals;
        return false;
      }
      add_fast(bytes);
    }
    const double start = std::max(now, channel_free_);
    channel_free_ = start + static_cast<double>(bytes) / bw_;
    queue_.push_back({ref, bytes, to, channel_free_});
    return true;
  }
  bool birth(uint64_t bytes, Tier tier) {
    if (tier != Tier::kFast) return true;
    if (fast + bytes > budget_) return false;
    add_fast(bytes);
    return true;
  }
  // Completes every move that ends at or before t, in channel order.
  void advance(double t, PlanExecutor& ex) {
    while (!queue_.empty() && queue_.front().end <= t) {
      const Pending m = queue_.front();
      queue_.pop_front();
      now = m.end;
      if (m.to == Tier::kSlow) fast -= m.bytes;  // eviction complete: fast memory is free
      if (dead_.erase(m.ref.key()) && m.to == Tier::kFast) fast -= m.bytes;  // died while coming in
      ex.on_move_done(m.ref, m.to, true);
    }
    now = t;
  }
  void free_object(ObjectRef ref, uint64_t bytes, Tier tier, bool moving) {
    if (moving) {
      dead_[ref.key()] = true;
      return;
    }
    if (tier == Tier::kFast) fast -= bytes;
  }

  double now = 0;
  uint64_t fast = 0, peak = 0, refusals = 0;

 private:
  struct Pending {
    ObjectRef ref;
    uint64_t bytes;
    Tier to;
    double end;
  };
  void add_fast(uint64_t bytes) {
    fast += bytes;
    peak = std::max(peak, fast);
  }
  uint64_t budget_;
  double bw_;
  double channel_free_ = 0;
  std::deque<Pending> queue_;
  std::map<uint64_t, bool> dead_;
};

struct Outcome {
  uint64_t refusals = 0, forced_slow = 0, peak = 0, budget = 0, managed = 0, issued = 0;
};

Outcome execute(const StepProfile& profile, double budget_fraction) {
  Outcome out;
  ProfileIndex index;
  std::string error;
  EXPECT_TRUE(index.build(profile, &error)) << error;
  MemorySystem mem;
  EXPECT_TRUE(memory_system_preset("cxl", &mem, &error));
  // The plans' moves are what this runs: without the fast pool's fault cost, which makes them static.
  mem.fault_ns_per_byte = 0;
  // Latency-bound, as the plans this test executes were made: with the preset's streamed share the
  // synthetic DNN's plan at some budgets moves nothing, and the executor's moves are what it tests.
  mem.stream_share = 0;
  mem.migration_bw_gbps = 3.3;
  PlannerConfig config;
  config.budget_fraction = budget_fraction;
  Plan plan;
  EXPECT_TRUE(plan_sentinel(index, mem, config, &plan, &error)) << error;
  auto cp = std::make_shared<CompiledPlan>();
  EXPECT_TRUE(cp->compile(plan, index, same, &error)) << error;
  out.budget = resolve_budget(config, index);

  TimedSink sink(out.budget, mem.migration_bw_gbps);
  PlanExecutor ex(&sink);
  ex.start(cp, 0);
  const uint32_t period = index.period();
  std::map<uint32_t, ObjectRef> live;  // object index -> its instance
  uint32_t next_slot = 1;
  auto born = [&](uint32_t obj, int64_t step, uint32_t event) {
    const ObjectView& o = index.object(obj);
    Tier tier = plan.birth(o.tag);
    if (!sink.birth(o.size, tier)) {
      ++out.forced_slow;
      tier = Tier::kSlow;
    }
    const ObjectRef ref{next_slot++, 1};
    live[obj] = ref;
    ex.on_alloc(ref, o.tag, o.size, tier, step, event, period);
  };
  for (uint32_t i = 0; i < index.objects().size(); ++i) {
    if (index.object(i).cyclic) born(i, -1, 0);
  }
  double t = 0;
  for (int64_t step = 0; step < 4; ++step) {
    for (uint32_t k = 0; k < period; ++k) {
      sink.advance(t, ex);
      for (uint32_t obj : index.deaths_at(k)) {
        auto it = live.find(obj);
        if (it == live.end()) continue;
        Tier tier;
        bool moving;
        if (ex.tier_of(index.object(obj).tag, &tier, &moving)) sink.free_object(it->second, index.object(obj).size, tier, moving);
        ex.on_free(it->second);
        live.erase(it);
      }
      if (index.births_at(k).empty()) {
        // Every event is an allocation in a real program; one the profile does not list is unknown here.
        ex.on_alloc(ObjectRef{next_slot++, 1}, 0xdead0000u + k, 0, Tier::kSlow, step, k, period);
      }
      for (uint32_t obj : index.births_at(k)) born(obj, step, k);
      EXPECT_LE(sink.fast, out.budget) << "step " << step << " event " << k;
      t += static_cast<double>(index.duration(k));
    }
  }
  sink.advance(t + 1e15, ex);
  out.refusals = sink.refusals;
  out.peak = sink.peak;
  out.managed = ex.stats().managed_steps;
  out.issued = ex.stats().moves_issued;
  return out;
}

TEST(ModelExecution, SyntheticDnnPlansRunWithoutRefusalsAtEveryBudget) {
  DnnConfig dnn;
  dnn.layers = 6;
  dnn.width = 512;
  dnn.batch = 512;
  const StepProfile profile = dnn_training_profile(dnn);
  for (double fraction : {0.1, 0.2, 0.5}) {
    const Outcome o = execute(profile, fraction);
    EXPECT_EQ(o.refusals, 0u) << fraction;
    EXPECT_EQ(o.forced_slow, 0u) << fraction;
    EXPECT_LE(o.peak, o.budget) << fraction;
    EXPECT_GT(o.issued, 0u) << fraction;
    EXPECT_EQ(o.managed, 3u) << fraction;  // the fourth step is still open
  }
}

// Real programs allocate one object per event (random_profile() does not: it is no program), so the variety
// comes from DNN profiles of other depths, optimizers and jittered sizes and durations.
TEST(ModelExecution, VariedDnnProfilesRunWithoutRefusals) {
  uint64_t seed = 1;
  for (uint32_t layers : {3u, 8u, 12u}) {
    for (uint32_t states : {0u, 1u, 2u}) {
      DnnConfig dnn;
      dnn.layers = layers;
      dnn.width = 256;
      dnn.batch = 1024;
      dnn.optimizer_states = states;
      dnn.jitter = 0.3;
      dnn.seed = seed++;
      const StepProfile profile = dnn_training_profile(dnn);
      for (double fraction : {0.15, 0.3}) {
        const Outcome o = execute(profile, fraction);
        EXPECT_EQ(o.refusals, 0u) << layers << " layers, " << states << " states, " << fraction;
        EXPECT_EQ(o.forced_slow, 0u) << layers << " layers, " << states << " states, " << fraction;
        EXPECT_LE(o.peak, o.budget);
      }
    }
  }
}

}  // namespace
}  // namespace sentinel::manage
