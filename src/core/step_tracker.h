// StepTracker: the runtime's step clock on the allocation path, and the search for the step structure
// off it.
//
// StepDetector (step_detector.h) finds the training step and keeps the step clock; finding it costs
// thousands of instructions per event (its period and shape search), which the allocation path must not
// pay, while the clock (StepClock: where an event lies in the step) costs a few dozen and is needed at
// once, for the object's tag and its tier at birth. So the tracker splits them:
//   - the allocation path, under the caller's clock lock, advances the clock in force and logs the event;
//   - the search thread (the runtime's service thread; in a track-mode program that has not yet made a
//     thread of its own, the allocating thread itself, a bounded slice per object outside the clock lock:
//     preload/service.h) feeds the logged events to a StepDetector of its own. When that detector locks on a structure or switches to another, the clock
//     in force adopts it: the search thread copies the detector's clock (as of the last event it
//     searched) into the spare clock, brings the copy up to the present by replaying the events logged
//     since (most of them without the lock, the last few under it), and makes it the clock in force.
//
// What the clock in force says, against a StepDetector fed the same events in the same order: the same
// for every event after an adoption (the same clock rules over the same events); for the events between
// the one at which the detector locked and the adoption (the search's lag, normally under 64 events), what
// the clock said before. At an adoption the occurrence numbers of the step in progress are counted again
// from its first event, so the tags of the events that follow are those the step's events get every step.
// Step marks (sentinel_step_begin) are logged with the event they precede and replayed with it.
//
// The log is a BoundedRing of kLogEvents: when the search falls that far behind, the newest events are
// not logged (the detector misses them; dropped_events() counts them; the clock never misses one), and an
// adoption whose replay would cross such a gap waits until the detector has searched past it.
//
// Thread safety:
//   - observe(), mark_step(), next_occurrence(), clock(), summary(): under the caller's clock lock (one
//     lock for all of them; search() takes the same lock to switch clocks).
//   - search(), try_search(), finish(), for_each_searched_event(): from any thread, serialised by the
//     tracker's own search lock (the service thread, the exit handler, and in a single-threaded program
//     the allocating thread, outside the clock lock, call them). search() holds the clock lock only to
//     replay the last events and switch: at most kLockedReplay events, O(1) each (a few more when the
//     producers keep running ahead, after four tries).
//   - dropped_events(), adoptions(), pending(): any thread (relaxed counters, hints).
// Never allocates; no system calls (a thread waiting for a lock may sched_yield, spin_lock.h).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/bounded_ring.h"
#include "core/site_counter.h"
#include "core/spin_lock.h"
#include "core/step_clock.h"
#include "core/step_detector.h"

namespace sentinel {

// What the clock says about the run, copied out under the clock lock (stats, the public API, the status).
struct StepSummary {
  bool locked = false;
  bool explicit_marks = false;
  uint32_t period = 0;
  int64_t step_index = -1;
  uint64_t complete_steps = 0;
  uint64_t events = 0;
  uint64_t relocks = 0;
  uint32_t last_step_objects = 0;
  uint64_t last_step_bytes = 0;
};

class StepTracker {
 public:
  static constexpr uint32_t kLogEvents = 4096;   // events logged for the search, power of two
  static constexpr uint32_t kSearchBatch = 64;   // observe() asks for a search every this many events
  static constexpr uint32_t kLockedReplay = 64;  // most events an adoption replays under the clock lock

  constexpr StepTracker() = default;
  StepTracker(const StepTracker&) = delete;
  StepTracker& operator=(const StepTracker&) = delete;

  // --- the allocation path, under the clock lock ---
  // One allocation event: advances the clock in force and logs the event for the search. Returns true
  // when the event begins a new step. *search_due is set every kSearchBatch events: the caller should
  // wake the search thread (outside the lock).
  bool observe(uint64_t site, uint32_t live_objects, uint64_t live_bytes, uint64_t size, uint32_t small_before,
               bool* search_due) noexcept;
  // The occurrence number of `site` in the step in progress (0 for its first allocation in the step).
  uint32_t next_occurrence(uint64_t site) noexcept { return states_[active_].occurrences.next(site); }
  // The program says a new step begins with the next allocation event.
  void mark_step() noexcept;
  const StepClock& clock() const noexcept { return states_[active_].clock; }
  StepSummary summary() const noexcept;

  // --- the search ---
  // Feeds logged events to the detector (all of them, or at most max_events), and adopts the structure it
  // locks on or switches to. Returns the events searched. try_search: the same, but returns 0 at once when
  // another thread is searching (for a caller on the allocation path, which must not wait for it).
  uint64_t search(SpinLock& clock_lock, uint64_t max_events = UINT64_MAX) noexcept;
  uint64_t try_search(SpinLock& clock_lock, uint64_t max_events) noexcept;
  // End of the run: searches what is logged, then counts the step in progress if it is complete.
  void finish(SpinLock& clock_lock) noexcept;
  // fn(site, live_objects, live_bytes, size, small_before) for each event in the detector's history
  // (the last StepDetector::kHistory searched), oldest first. Holds the search lock across fn.
  template <typename Fn>
  void for_each_searched_event(Fn fn) noexcept {
    SpinGuard searching(search_lock_);
    detector_.for_each_event(fn);
  }
  // The child after fork(): it has no search thread, and its clock stays as it is.
  void fork_child() noexcept;

  uint64_t dropped_events() const noexcept { return log_.dropped(); }
  uint64_t adoptions() const noexcept { return adoptions_.load(std::memory_order_relaxed); }
  uint64_t pending() const noexcept { return logged_.load(std::memory_order_relaxed) - searched_.load(std::memory_order_relaxed); }

 private:
  struct LoggedEvent {
    uint64_t site = 0;
    uint64_t live_bytes = 0;
    uint64_t size = 0;
    uint32_t live_objects = 0;
    uint32_t small_before = 0;
    bool marked = false;  // the program marked a step before this event
  };
  // A clock with the occurrence counts of its step in progress: the unit that is switched.
  struct ClockState {
    StepClock clock;
    SiteCounter occurrences;
  };

  static void replay(ClockState& state, const LoggedEvent& e) noexcept;
  // Makes a copy of the detector's clock the clock in force. False when the log has a gap after the
  // detector's last event (retried after the next search).
  bool adopt(SpinLock& clock_lock) noexcept;
  uint64_t search_some(uint64_t max_events) noexcept;
  uint64_t search_held(SpinLock& clock_lock, uint64_t max_events) noexcept;

  // The clock in force is states_[active_]; active_ changes only under the clock lock, by the search.
  ClockState states_[2] = {};
  uint32_t active_ = 0;
  bool mark_pending_ = false;  // guarded by the clock lock: logged with the next event
  BoundedRing<LoggedEvent, kLogEvents> log_;
  std::atomic<uint64_t> logged_{0};    // events given to observe()
  std::atomic<uint64_t> log_gap_{0};   // log position + 1 of the newest event that could not be logged

  SpinLock search_lock_;
  StepDetector detector_;                 // the search's; guarded by search_lock_
  std::atomic<uint64_t> searched_{0};     // events the detector has seen (log positions consumed)
  uint64_t adopted_lock_event_ = 0;       // the detector's structure the clock in force has (search lock)
  bool adopted_locked_ = false;
  bool adopt_pending_ = false;
  bool search_disabled_ = false;
  std::atomic<uint64_t> adoptions_{0};
};

}  // namespace sentinel
