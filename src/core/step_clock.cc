#include "core/step_clock.h"

#include "core/hash.h"

namespace sentinel {

StepClock::CycleSite* StepClock::find_cycle_site(uint64_t site) noexcept {
  uint32_t at = static_cast<uint32_t>(mix64(site)) & (kCycleSlots - 1);
  // At most half full (kCycleSlots = 2 * kMaxPeriod), so an empty slot ends every search.
  for (;; at = (at + 1) & (kCycleSlots - 1)) {
    CycleSite& c = cycle_sites_[at];
    if (c.per_step == 0 || c.site == site) return &c;
  }
}

bool StepClock::observe_marked(uint64_t site, uint64_t size) noexcept {
  if (mark_pending_) {
    mark_pending_ = false;
    if (!explicit_) {
      // The first marker switches detection off: from here on the program defines the steps. A structure
      // detected before it (in the guest, import torch runs long enough for the detector to lock on its
      // allocations) is a step structure that ended: it counts as a re-detection, so that a profile or
      // plan made on it starts over on the marked steps.
      if (locked_) ++relocks_;
      explicit_ = true;
      locked_ = false;
      period_ = 0;
      step_events_ = 0;
    } else {
      close_step(false);
    }
    begin_step(site, size);
    return true;
  }
  if (step_index_ >= 0) advance(site, size);
  return false;
}

bool StepClock::observe_locked(uint64_t site, uint32_t live_objects, uint64_t size) noexcept {
  if (!locked_) return false;
  if (begins_step(site, live_objects, anchor_seen_, step_complete(false))) {
    close_step(false);
    begin_step(site, size);
    return true;
  }
  if (site == anchor_site_) ++anchor_seen_;
  advance(site, size);
  return false;
}

// Whether an event begins a new step, given the step in progress (anchor occurrences seen in it, and
// whether it is complete already). With an anchor that occurs several times per step, every
// anchor_per_step-th occurrence does, if the step in progress is complete by then: an evaluation pass
// uses the forward's call-sites, and its anchor occurrences would otherwise shift the count (the step it
// interrupts is then counted once, with the evaluation pass in it). And the anchor's tensor may be too
// small to be an object in a step with a smaller batch: then the event that follows the anchor in the
// learned step stands in for it, at the learned start's level of live objects, after a complete step.
bool StepClock::begins_step(uint64_t site, uint32_t live_objects, uint32_t seen, bool complete) const noexcept {
  if (site == anchor_site_) return anchor_per_step_ == 1 || (seen >= anchor_per_step_ && complete);
  // The step in progress must have reached the learned length too: the event after the anchor also
  // recurs inside a step, near its end at the start's level of live objects (an LSTM's gate buffer four
  // events before the end), and starting a step there made every step start over at the anchor.
  return anchor_per_step_ == 1 && period_ > 1 && site == cycle_[1] && complete && live_objects <= start_objects_ &&
         step_events_ >= period_;
}

void StepClock::begin_step(uint64_t site, uint64_t size) noexcept {
  step_index_ = static_cast<int64_t>(complete_steps_);
  event_in_step_ = 0;
  step_events_ = 1;
  step_bytes_ = size;
  anchor_seen_ = 1;
  ++step_serial_;
  step_covered_ = 0;
  if (explicit_) {
    on_cycle_ = period_ > 0 && cycle_[0] == site;
    cycle_[0] = site;
    return;
  }
  on_cycle_ = period_ > 0 && cycle_[0] == site;
  CycleSite* c = find_cycle_site(site);
  if (c->counted) {
    c->seen_in = step_serial_ + 1;
    step_covered_ = 1;
  }
}

void StepClock::advance(uint64_t site, uint64_t size) noexcept {
  ++event_in_step_;
  ++step_events_;
  step_bytes_ += size;
  const bool inside = event_in_step_ < kMaxPeriod;
  on_cycle_ = inside && event_in_step_ < period_ && cycle_[event_in_step_] == site;
  if (explicit_) {
    // The marked step in progress becomes the reference for the next one, position by position.
    if (inside) cycle_[event_in_step_] = site;
    return;
  }
  CycleSite* c = find_cycle_site(site);
  if (c->counted && c->seen_in != step_serial_ + 1) {
    c->seen_in = step_serial_ + 1;
    ++step_covered_;
  }
}

bool StepClock::step_complete(bool at_exit) const noexcept {
  if (explicit_) return !at_exit || step_events_ * 2 >= last_step_objects_;
  return step_covered_ * 10 >= cycle_distinct_ * 9;
}

void StepClock::close_step(bool at_exit) noexcept {
  if (step_index_ < 0 || step_events_ == 0) return;
  if (step_complete(at_exit)) {
    ++complete_steps_;
    last_complete_event_ = events_ - 1;
    last_step_objects_ = step_events_;
    last_step_bytes_ = step_bytes_;
    if (explicit_) period_ = step_events_ < kMaxPeriod ? step_events_ : kMaxPeriod;
  }
  step_events_ = 0;
}

}  // namespace sentinel
