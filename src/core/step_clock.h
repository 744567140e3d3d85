// The step clock: where the latest allocation event lies in the training step, given a learned step.
//
// What it holds: the structure of the learned step, which StepDetector sets when it locks (the call-sites
// of one step, position by position; the table of its distinct call-sites, how often each occurs per step
// and whether it counts for completeness; the anchor call-site that begins a step), or the steps the
// program marks itself (sentinel_step_begin); and the clock over it: the step in progress, the position
// of the latest event in it, the complete steps so far. The rules (when a step begins, when it is
// complete) are described in step_detector.h; this class applies them to one event at a time.
//
// Cost per observe(): O(1): one probe sequence in the call-site table (kept at most half full) and the
// step boundary rule. It never searches for a structure: StepDetector does that, and StepTracker
// (step_tracker.h) runs the search off the allocation path and hands what it finds to the runtime's
// clock by copying a whole clock (this class is trivially copyable for that).
//
// Invariants: period() <= kMaxPeriod; the call-site table holds period() events' distinct call-sites and
// is never more than half full; locked() and explicit_marks() are never both set by detection (a mark
// switches detection off for the rest of the run).
//
// Thread safety: none; the caller serialises. Never allocates; no system calls.
#pragma once

#include <cstdint>

namespace sentinel {

class StepDetector;

class StepClock {
 public:
  // Longest step, in events. A transformer's step on a BLAS that takes a 512 KiB scratch buffer per matrix of a
  // batched matmul (Debian's PyTorch 1.13) is about 6 * layers * batch * heads events: 4,226 for ViT-B/16 at
  // batch 4 (128 or 224 px); 14,606 at batch 16 (docs/step-detection.md).
  static constexpr uint32_t kMaxPeriod = 16384;
  static constexpr uint32_t kCycleSlots = 2 * kMaxPeriod;  // power of two, at most half full

  // One allocation event (counted), for a clock that is not fed by a StepDetector. Returns true when the
  // event is the first of a new step.
  bool observe(uint64_t site, uint32_t live_objects, uint64_t size) noexcept {
    ++events_;
    if (marked_or_explicit()) return observe_marked(site, size);
    return observe_locked(site, live_objects, size);
  }
  // The program says a new step begins with the next allocation event.
  void mark_step() noexcept { mark_pending_ = true; }
  // End of the run: counts the step in progress if it is complete.
  void finish() noexcept {
    exit_step_complete_ = !(explicit_ || locked_) || step_index_ < 0 || step_events_ == 0 || step_complete(true);
    if (explicit_ || locked_) close_step(true);
    step_events_ = 0;
  }
  // After finish(): whether the events after the last complete step made a complete step too (true when
  // there were none). An evaluation pass at the program's end begins like a step and is not one.
  bool exit_step_complete() const noexcept { return exit_step_complete_; }

  bool locked() const noexcept { return locked_ || explicit_; }
  bool explicit_marks() const noexcept { return explicit_; }
  uint32_t period() const noexcept { return period_; }
  int64_t step_index() const noexcept { return step_index_; }
  uint32_t event_in_step() const noexcept { return event_in_step_; }
  bool on_cycle() const noexcept { return on_cycle_; }
  uint64_t complete_steps() const noexcept { return complete_steps_; }
  uint64_t events_seen() const noexcept { return events_; }
  uint32_t last_step_objects() const noexcept { return last_step_objects_; }
  uint64_t last_step_bytes() const noexcept { return last_step_bytes_; }
  uint64_t relocks() const noexcept { return relocks_; }
  uint64_t lock_event() const noexcept { return lock_event_; }
  // Events of the step in progress so far (0 before the first step).
  uint32_t step_events() const noexcept { return step_events_; }

 private:
  friend class StepDetector;

  // The distinct call-sites of the learned step: how often each occurs in it, and in which step it was
  // last seen (for the coverage of the step in progress). search_mark is StepDetector's own scratch mark
  // (coverage of a candidate structure), apart from the clock's, so a search never disturbs the coverage
  // of the step in progress.
  struct CycleSite {
    uint64_t site;
    uint32_t per_step;  // 0 = empty slot
    uint32_t seen_in;   // step serial + 1
    uint32_t search_mark;
    bool counted;       // counts for completeness (see StepDetector::build_cycle)
  };

  CycleSite* find_cycle_site(uint64_t site) noexcept;
  bool marked_or_explicit() const noexcept { return mark_pending_ || explicit_; }
  // The event after a mark, or any event once steps are marked.
  bool observe_marked(uint64_t site, uint64_t size) noexcept;
  // Any other event: the step boundary rule of the locked structure (nothing while none is locked).
  bool observe_locked(uint64_t site, uint32_t live_objects, uint64_t size) noexcept;
  bool begins_step(uint64_t site, uint32_t live_objects, uint32_t seen, bool complete) const noexcept;
  void begin_step(uint64_t site, uint64_t size) noexcept;
  void advance(uint64_t site, uint64_t size) noexcept;
  void close_step(bool at_exit) noexcept;
  bool step_complete(bool at_exit) const noexcept;

  uint64_t events_ = 0;  // events observed, this one included

  bool locked_ = false;
  bool explicit_ = false;
  bool mark_pending_ = false;
  bool on_cycle_ = false;
  bool exit_step_complete_ = true;
  uint32_t period_ = 0;
  uint64_t cycle_[kMaxPeriod] = {};  // call-sites of one step, from its first event
  CycleSite cycle_sites_[kCycleSlots] = {};
  uint32_t cycle_distinct_ = 0;      // distinct counted call-sites in cycle_
  uint64_t anchor_site_ = 0;
  uint32_t anchor_per_step_ = 1;     // occurrences of the anchor site per step
  uint32_t anchor_seen_ = 0;         // occurrences in the current step
  uint32_t start_objects_ = 0;       // live objects at the first event of the learned step
  uint64_t lock_event_ = 0;
  uint64_t last_complete_event_ = 0;
  uint64_t relocks_ = 0;

  int64_t step_index_ = -1;
  uint32_t step_serial_ = 0;         // steps begun since the lock, for CycleSite::seen_in
  uint32_t event_in_step_ = 0;
  uint32_t step_events_ = 0;
  uint32_t step_covered_ = 0;        // distinct cycle call-sites seen in the step in progress
  uint64_t step_bytes_ = 0;
  uint64_t complete_steps_ = 0;
  uint32_t last_step_objects_ = 0;
  uint64_t last_step_bytes_ = 0;
};

}  // namespace sentinel
