#include "core/step_tracker.h"

namespace sentinel {

bool StepTracker::observe(uint64_t site, uint32_t live_objects, uint64_t live_bytes, uint64_t size,
                          uint32_t small_before, bool* search_due) noexcept {
  const uint64_t n = logged_.load(std::memory_order_relaxed);  // written only here, under the clock lock
  logged_.store(n + 1, std::memory_order_relaxed);
  if (!log_.push(LoggedEvent{site, live_bytes, size, live_objects, small_before, mark_pending_})) {
    // The search is kLogEvents behind: the detector misses this event. The next logged one takes this
    // position; an adoption must not replay across it (adopt()).
    log_gap_.store(log_.pushed() + 1, std::memory_order_relaxed);
  }
  mark_pending_ = false;
  *search_due = (n + 1) % kSearchBatch == 0;
  ClockState& state = states_[active_];
  const bool new_step = state.clock.observe(site, live_objects, size);
  if (new_step) state.occurrences.reset();
  return new_step;
}

void StepTracker::mark_step() noexcept {
  mark_pending_ = true;
  states_[active_].clock.mark_step();
}

StepSummary StepTracker::summary() const noexcept {
  const StepClock& c = clock();
  StepSummary s;
  s.locked = c.locked();
  s.explicit_marks = c.explicit_marks();
  s.period = c.period();
  s.step_index = c.step_index();
  s.complete_steps = c.complete_steps();
  s.events = c.events_seen();
  s.relocks = c.relocks();
  s.last_step_objects = c.last_step_objects();
  s.last_step_bytes = c.last_step_bytes();
  return s;
}

// What observe() does to the clock in force, for a logged event.
void StepTracker::replay(ClockState& state, const LoggedEvent& e) noexcept {
  if (e.marked) state.clock.mark_step();
  if (state.clock.observe(e.site, e.live_objects, e.size)) state.occurrences.reset();
  state.occurrences.next(e.site);
}

bool StepTracker::adopt(SpinLock& clock_lock) noexcept {
  const uint64_t from = log_.popped();  // the first event the detector has not searched
  if (log_gap_.load(std::memory_order_relaxed) > from) return false;
  // active_ changes only here, so this thread reads it without the lock; the spare is nobody else's.
  ClockState& spare = states_[active_ ^ 1];
  spare.clock = detector_.clock();
  // The occurrences of the step in progress, counted again from its first event (in the history).
  spare.occurrences.reset();
  if (spare.clock.step_index() >= 0) {
    detector_.for_each_event_since(detector_.events_seen() - spare.clock.step_events(),
                                   [&](uint64_t site, uint32_t, uint64_t, uint64_t, uint32_t) {
                                     spare.occurrences.next(site);
                                   });
  }
  // The events logged since, most of them without the lock (a logged event stays in place until it is
  // searched), the last few under it, when every logged event is filled.
  uint64_t next = from;
  LoggedEvent e;
  for (uint32_t round = 0;; ++round) {
    while (log_.peek(next, &e)) replay(spare, e), ++next;
    clock_lock.lock();
    if (log_.pushed() - next > kLockedReplay && round < 4) {  // producers ran ahead meanwhile
      clock_lock.unlock();
      continue;
    }
    while (log_.peek(next, &e)) replay(spare, e), ++next;
    const bool complete = log_gap_.load(std::memory_order_relaxed) <= from;
    if (complete) {
      if (mark_pending_) spare.clock.mark_step();  // a mark after the last logged event
      active_ ^= 1;
    }
    clock_lock.unlock();
    return complete;
  }
}

// Searches logged events until the detector locks on a structure or switches to another (then returns
// with adopt_pending_ set, so the adoption replays as few events as possible) or the log is empty.
uint64_t StepTracker::search_some(uint64_t max_events) noexcept {
  uint64_t searched = 0;
  LoggedEvent e;
  while (searched < max_events && log_.pop(&e)) {
    if (e.marked) detector_.mark_step();
    detector_.observe(e.site, e.live_objects, e.live_bytes, e.size, e.small_before);
    ++searched;
    const StepClock& c = detector_.clock();
    // Explicit marks need no adoption: the clock in force follows them itself.
    if (!c.explicit_marks() && c.locked() && (!adopted_locked_ || c.lock_event() != adopted_lock_event_)) {
      adopted_locked_ = true;
      adopted_lock_event_ = c.lock_event();
      adopt_pending_ = true;
      break;
    }
  }
  searched_.fetch_add(searched, std::memory_order_relaxed);
  return searched;
}

uint64_t StepTracker::search(SpinLock& clock_lock, uint64_t max_events) noexcept {
  SpinGuard searching(search_lock_);
  return search_held(clock_lock, max_events);
}

uint64_t StepTracker::try_search(SpinLock& clock_lock, uint64_t max_events) noexcept {
  if (!search_lock_.try_lock()) return 0;
  const uint64_t n = search_held(clock_lock, max_events);
  search_lock_.unlock();
  return n;
}

uint64_t StepTracker::search_held(SpinLock& clock_lock, uint64_t max_events) noexcept {
  if (search_disabled_) return 0;
  uint64_t total = 0;
  for (;;) {
    const uint64_t n = search_some(max_events - total);
    total += n;
    // One try per pass: an adoption blocked by a gap in the log waits until the search has passed it.
    if (adopt_pending_ && adopt(clock_lock)) {
      adopt_pending_ = false;
      adoptions_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (n == 0 || total >= max_events || log_.empty()) return total;
  }
}

void StepTracker::finish(SpinLock& clock_lock) noexcept {
  search(clock_lock);
  SpinGuard clock(clock_lock);
  states_[active_].clock.finish();
}

void StepTracker::fork_child() noexcept {
  search_lock_.reset_after_fork();
  search_disabled_ = true;
}

}  // namespace sentinel
