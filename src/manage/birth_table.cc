#include "manage/birth_table.h"

namespace sentinel::manage {
namespace {

inline uint64_t mix(uint64_t tag) { return tag * 0x9e3779b97f4a7c15ull; }

}  // namespace

void BirthTable::build(const CompiledPlan& plan, int64_t first_step) {
  period_ = plan.period();
  first_step_ = first_step;
  expected_.resize(period_);
  acts_.assign(period_, 0);
  order_.resize(period_);
  for (uint32_t k = 0; k < period_; ++k) {
    expected_[k] = plan.expected_tag(k);
    acts_[k] = k == 0 || !plan.moves_at(k).empty();
  }
  uint64_t size = 16;
  while (size < 2 * plan.objects().size()) size *= 2;
  slots_.assign(size, Slot{});
  mask_ = size - 1;
  for (const auto& [tag, o] : plan.objects()) {
    if (tag == 0) continue;
    uint64_t i = mix(tag) & mask_;
    while (slots_[i].tag != 0) i = (i + 1) & mask_;
    slots_[i] = Slot{tag, o.birth == Tier::kFast ? BirthWant::kFast : BirthWant::kSlow,
                     o.persistent ? kNoPosition : o.birth_event};
  }
}

const BirthTable::Slot* BirthTable::find(uint64_t tag) const noexcept {
  if (slots_.empty() || tag == 0) return nullptr;
  for (uint64_t i = mix(tag) & mask_;; i = (i + 1) & mask_) {
    if (slots_[i].tag == tag) return &slots_[i];
    if (slots_[i].tag == 0) return nullptr;
  }
}

uint32_t BirthTable::position_of(uint64_t tag) const noexcept {
  const Slot* s = find(tag);
  return s != nullptr ? s->position : kNoPosition;
}

BirthWant BirthTable::lookup(uint64_t tag) const noexcept {
  const Slot* s = find(tag);
  return s != nullptr ? s->want : BirthWant::kFirstTouch;
}

BirthDecision BirthGate::decide(int64_t step, uint32_t event, uint32_t period, uint64_t tag) noexcept {
  BirthDecision d;
  // The step as the executor follows it (PlanExecutor::on_alloc): a new step index, or event 0 again where
  // the detector began the step over, starts one, under the period of that moment.
  const bool restart = step >= 0 && step == step_ && event == 0 && event_ > 0;
  event_ = event;
  if ((step >= 0 && step != step_) || restart) {
    step_ = step;
    step_period_ = period;
    step_left_ = false;
    order_reset_pending_ = true;
  }
  const BirthTable* t = current();
  if (t == nullptr || step < 0 || !step_starts_on_plan(step, step_period_, t->first_step(), t->period())) {
    return d;
  }
  if (step_left_) {
    d.quiet = true;  // the executor issues nothing more in this step
    return d;
  }
  if (t != order_table_ || order_reset_pending_) {
    t->order().reset();
    order_table_ = t;
    order_reset_pending_ = false;
  }
  const TagAtEvent match = match_tag(t->expected_tags(), event, tag, [t](uint64_t x) { return t->position_of(x); });
  tag = match.tag;
  if (event_leaves_plan(event, period, t->period(), match, t->expected_tags(), t->order())) {
    step_left_ = true;
    d.deviated_now = true;
    return d;
  }
  d.want = t->lookup(tag);
  d.unknown_tag = d.want == BirthWant::kFirstTouch;  // a known tag is planned fast or slow
  d.quiet = !t->acts_at(event);
  return d;
}

}  // namespace sentinel::manage
