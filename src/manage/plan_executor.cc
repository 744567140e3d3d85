#include "manage/plan_executor.h"

#include <algorithm>
#include <utility>

namespace sentinel::manage {

PlanExecutor::PlanExecutor(MoveSink* sink, ExecutionObserver* observer)
    : sink_(sink), observer_(observer != nullptr ? observer : &null_observer_) {}

void PlanExecutor::start(std::shared_ptr<const CompiledPlan> plan, int64_t first_step) {
  next_plan_ = std::move(plan);
  next_first_step_ = first_step;
  if (plan_ == nullptr && next_plan_ != nullptr) reconcile_persistent(*next_plan_);
}

void PlanExecutor::stop() {
  plan_.reset();
  next_plan_.reset();
  waiting_.clear();
  awaited_.clear();
  if (step_managed_) {
    ++stats_.fallback_steps;  // the step in progress did not follow a plan to its end
    step_managed_ = false;
    step_deviated_ = false;
  }
}

void PlanExecutor::finish(bool step_complete) {
  if (step_ < 0) return;
  if (!step_complete) {
    // Not a training step, whether or not it left the plan: the optimizer's allocations that begin a step
    // whose start the detector put there, after the last iteration's backward pass (a U-Net's 16 of its
    // 331 events), counted one managed step more than there were steps.
    step_deviated_ = false;
    step_managed_ = false;
  }
  end_step();
  step_ = -1;
  phase_ = 0;
}

void PlanExecutor::begin_step(int64_t step, uint32_t period) {
  end_step();
  if (next_plan_ != nullptr && step >= next_first_step_) {
    plan_ = std::move(next_plan_);
    first_step_ = next_first_step_;
    awaited_.assign(plan_->period(), {});
    order_.resize(plan_->period());
  }
  step_ = step;
  step_deviated_ = false;
  step_reached_end_ = false;
  step_overran_ = false;
  order_.reset();
  step_managed_ = plan_ != nullptr && step_starts_on_plan(step, period, first_step_, plan_->period());
  observer_->on_step_begin(step, step_managed_);
  if (step_managed_) reconcile_persistent(*plan_);
}

void PlanExecutor::restart_step(uint32_t period) {
  waiting_.clear();
  step_deviated_ = false;
  step_reached_end_ = false;
  step_overran_ = false;
  order_.reset();
  step_managed_ = plan_ != nullptr && step_starts_on_plan(step_, period, first_step_, plan_->period());
}

void PlanExecutor::end_step() {
  if (step_ < 0) return;
  if (step_managed_ && !step_deviated_) ++stats_.managed_steps;
  if (step_deviated_) ++stats_.fallback_steps;
  stats_.moves_dropped += waiting_.size();
  waiting_.clear();
  step_managed_ = false;
}

void PlanExecutor::reconcile_persistent(const CompiledPlan& plan) {
  // Evictions first: they make the room the prefetches need.
  for (Tier target : {Tier::kSlow, Tier::kFast}) {
    for (auto& [key, o] : live_) {
      const PlannedObject* po = plan.object(o.tag);
      if (po == nullptr || !po->persistent || po->birth != target || o.failures >= kMaxFailures) continue;
      if (o.moving ? o.moving_to == target : o.tier == target) continue;
      issue(o, target, true);
    }
  }
}

void PlanExecutor::issue(Live& o, Tier to, bool reconcile) {
  auto same = std::find_if(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.key == o.ref.key(); });
  if (o.moving ? o.moving_to == to : o.tier == to) {
    if (same != waiting_.end()) waiting_.erase(same);  // a waiting move the other way is undone
    return;
  }
  const bool catch_up_prefetch = reconcile && to == Tier::kFast;
  if (!o.moving && waiting_.empty() && sink_->request_move(o.ref, o.bytes, to)) {
    o.moving = true;
    o.moving_to = to;
    o.reconciling = catch_up_prefetch;
    ++stats_.moves_issued;
    if (reconcile) ++stats_.reconcile_moves;
    observer_->on_object_changed(o.ref, o.tag, true, o.tier, true);
    observer_->on_move_issued(step_, phase_, o.tag, to);
    return;
  }
  // A step-start prefetch with no room now is left for the next step's start: waiting, it was asked again
  // at every event and held back the plan's own moves behind it (googlenet, whose fast pool its persistent
  // twins had filled: two refused prefetches asked 1,500 times a step, docs/results.md).
  if (catch_up_prefetch) {
    ++stats_.reconcile_prefetches_skipped;
    return;
  }
  // Refused, or behind a waiting move (first in, first out), or the object's previous move is still
  // running: wait. A later move of the same object replaces its waiting one.
  if (same != waiting_.end()) waiting_.erase(same);
  waiting_.push_back(Waiting{o.ref.key(), to});
  ++stats_.moves_deferred;
}

void PlanExecutor::retry_waiting() {
  while (!waiting_.empty()) {
    const Waiting w = waiting_.front();
    auto it = live_.find(w.key);
    if (it == live_.end() || (it->second.moving ? it->second.moving_to == w.to : it->second.tier == w.to)) {
      waiting_.pop_front();  // died or already there: a no-op now
      continue;
    }
    Live& o = it->second;
    if (o.moving || !sink_->request_move(o.ref, o.bytes, w.to)) return;  // still no room: keep the order
    waiting_.pop_front();
    o.moving = true;
    o.moving_to = w.to;
    ++stats_.moves_issued;
    observer_->on_object_changed(o.ref, o.tag, true, o.tier, true);
    observer_->on_move_issued(step_, phase_, o.tag, w.to);
  }
}

void PlanExecutor::check_late(uint32_t event) {
  if (event >= awaited_.size()) return;
  auto& list = awaited_[event];
  for (size_t i = 0; i < list.size();) {
    if (list[i].step > step_) {
      ++i;
      continue;
    }
    if (list[i].step == step_) {
      auto it = live_.find(list[i].key);
      if (it != live_.end() && it->second.tier != Tier::kFast) {
        ++stats_.late_prefetches;
        late_tags_.insert(list[i].tag);
      }
    }
    list[i] = list.back();
    list.pop_back();
  }
}

void PlanExecutor::measure_fidelity(uint32_t phase) {
  for (const FastUse& u : plan_->fast_uses(phase)) {
    auto t = by_tag_.find(u.tag);
    if (t == by_tag_.end()) continue;
    auto it = live_.find(t->second);
    if (it == live_.end()) continue;
    stats_.fast_use_bytes += u.bytes;
    if (it->second.tier == Tier::kFast) stats_.fast_use_bytes_on_fast += u.bytes;
  }
}

void PlanExecutor::on_alloc(ObjectRef ref, uint64_t tag, uint64_t bytes, Tier tier, int64_t step, uint32_t event,
                            uint32_t period) {
  // The detector may begin a step again under the same index (a false start, such as an evaluation batch
  // allocated from the input's call-site, does not use up an index): event 0 again starts it over.
  const bool restart = step >= 0 && step == step_ && event == 0 && phase_ > 0;
  phase_ = event;
  if (step >= 0 && step != step_) begin_step(step, period);
  if (restart) restart_step(period);
  TagAtEvent match{tag, false};
  if (plan_ != nullptr) {
    const CompiledPlan& plan = *plan_;
    match = match_tag(plan.expected_tags(), event, tag, [&plan](uint64_t x) { return plan.position_of(x); });
  }
  tag = match.tag;
  Live o;
  o.ref = ref;
  o.tag = tag;
  o.bytes = bytes;
  o.tier = tier;
  live_[ref.key()] = o;
  by_tag_[tag] = ref.key();
  observer_->on_object_changed(ref, tag, true, tier, false);
  if (!step_managed_ || step_deviated_ || step_overran_ || step != step_) return;

  if (step_reached_end_ && event >= plan_->period()) {
    step_overran_ = true;  // births first-touch from here, as the birth gate decides (event_leaves_plan)
    return;
  }
  if (event_leaves_plan(event, period, plan_->period(), match, plan_->expected_tags(), order_)) {
    step_deviated_ = true;
    waiting_.clear();
    observer_->on_deviation(step_, event);
    return;
  }
  observer_->on_phase_begin(step_, event);
  check_late(event);
  measure_fidelity(event);
  retry_waiting();
  for (const PlannedMove& m : plan_->moves_at(event)) {
    auto t = by_tag_.find(m.tag);
    if (t == by_tag_.end()) continue;
    auto it = live_.find(t->second);
    if (it == live_.end()) continue;
    const Tier to = m.kind == MoveKind::kPrefetch ? Tier::kFast : Tier::kSlow;
    issue(it->second, to, false);
    if (m.kind == MoveKind::kPrefetch && m.need_phase != PlannedMove::kNoUse) {
      awaited_[m.need_phase].push_back(Awaited{it->first, m.tag, step_ + m.need_step_offset});
    }
  }
  if (event + 1 == plan_->period()) step_reached_end_ = true;
}

void PlanExecutor::on_free(ObjectRef ref) {
  auto it = live_.find(ref.key());
  if (it == live_.end()) return;
  auto t = by_tag_.find(it->second.tag);
  if (t != by_tag_.end() && t->second == ref.key()) by_tag_.erase(t);
  observer_->on_object_changed(ref, it->second.tag, false, it->second.tier, false);
  live_.erase(it);
  if (step_managed_ && !step_deviated_) retry_waiting();  // its bytes may be the room a waiting move needs
}

void PlanExecutor::retag(uint64_t key, uint64_t tag) {
  auto it = live_.find(key);
  if (it == live_.end() || it->second.tag == tag) return;
  Live& o = it->second;
  const uint64_t old = o.tag;
  observer_->on_object_changed(o.ref, old, false, o.tier, o.moving);
  o.tag = tag;
  by_tag_[tag] = key;
  observer_->on_object_changed(o.ref, tag, true, o.tier, o.moving);
  // The old tag now names the live objects that kept it, if any (by_tag_ named the newest instance).
  auto t = by_tag_.find(old);
  if (t == by_tag_.end() || t->second != key) return;
  by_tag_.erase(t);
  for (const auto& [k, other] : live_) {
    if (other.tag == old && (by_tag_.count(old) == 0 || k > by_tag_[old])) by_tag_[old] = k;
  }
}

void PlanExecutor::on_move_done(ObjectRef ref, Tier to, bool moved, bool refused) {
  auto it = live_.find(ref.key());
  if (refused) {
    if (it == live_.end()) return;
    it->second.moving = false;
    observer_->on_object_changed(it->second.ref, it->second.tag, true, it->second.tier, false);
    if (!step_managed_ || step_deviated_) return;
    if (std::exchange(it->second.reconciling, false)) {  // a step-start prefetch: left for the next step
      ++stats_.reconcile_prefetches_skipped;
      return;
    }
    // First in line: it was issued before anything that waits now.
    waiting_.push_front(Waiting{ref.key(), to});
    ++stats_.moves_deferred;
    return;
  }
  if (it != live_.end()) {
    Live& o = it->second;
    o.moving = false;
    o.reconciling = false;
    if (moved) o.tier = to;
    o.failures = moved ? 0 : o.failures + 1;
    observer_->on_object_changed(o.ref, o.tag, true, o.tier, false);
    observer_->on_move_finished(step_, phase_, o.tag, to, moved);
  }
  if (moved) {
    ++stats_.moves_done;
    if (it != live_.end()) stats_.bytes_migrated += it->second.bytes;
  } else {
    ++stats_.moves_failed;
  }
  if (step_managed_ && !step_deviated_) retry_waiting();
}

std::vector<uint64_t> PlanExecutor::take_late_tags() {
  std::vector<uint64_t> tags(late_tags_.begin(), late_tags_.end());
  late_tags_.clear();
  std::sort(tags.begin(), tags.end());
  return tags;
}

bool PlanExecutor::tier_of(uint64_t tag, Tier* tier, bool* moving) const {
  auto t = by_tag_.find(tag);
  if (t == by_tag_.end()) return false;
  auto it = live_.find(t->second);
  if (it == live_.end()) return false;
  *tier = it->second.tier;
  *moving = it->second.moving;
  return true;
}

bool PlanExecutor::move_waiting(uint64_t tag) const {
  auto t = by_tag_.find(tag);
  if (t == by_tag_.end()) return false;
  for (const Waiting& w : waiting_) {
    if (w.key == t->second) return true;
  }
  return false;
}

bool PlanExecutor::intended_tier(uint64_t tag, Tier* tier) const {
  auto t = by_tag_.find(tag);
  if (t == by_tag_.end()) return false;
  auto it = live_.find(t->second);
  if (it == live_.end()) return false;
  *tier = it->second.moving ? it->second.moving_to : it->second.tier;
  for (const Waiting& w : waiting_) {
    if (w.key == t->second) *tier = w.to;
  }
  return true;
}

}  // namespace sentinel::manage
