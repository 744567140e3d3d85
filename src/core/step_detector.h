// Finds the training step in the stream of large allocations.
//
// Training repeats itself: every step allocates the same objects from the same call-sites in the same
// order. The detector looks for the smallest period p such that, over the last max(p, 32) allocation
// events, both the call-site and the number of live objects at each event equal those p events earlier
// (at most 10% mismatches, so a few stray allocations do not hide the period). Comparing the live
// objects and live bytes is what rejects the period of one layer inside a network of identical
// layers: during the forward pass every layer leaves its activations alive, so the live bytes grow
// from layer to layer and only repeat from step to step.
//
// Once locked, a step begins at an anchor event: the first event after the point of the step where the
// fewest object bytes are alive (between two steps, when activations are gone), shifted to the nearest
// call-site that occurs once per step if one is close. Earlier steps still in the history are counted
// retroactively. A step counts as complete when at least half of its events match the learned cycle
// position by position. Two incomplete steps in a row unlock the detector and it searches again.
//
// A loop inside the step whose iterations leave no memory behind (the time steps of a recurrent
// network, for instance) repeats exactly too, and may be found first, before two whole steps have been
// seen. So the detector keeps looking while locked: a longer period that verifies over its own length,
// where the current period does not, is the larger structure; the detector switches to it and
// recounts the steps in its history. (A program that really changes its step, say a second model
// trained after the first, is recounted the same way: steps of the first model that no longer match
// are then not counted.)
//
// An explicit marker (mark_step) overrides detection for the rest of the run: every marked segment is
// one step.
//
// Thread safety: none; the caller serialises calls. Never allocates (fixed arrays).
#pragma once

#include <cstdint>

namespace sentinel {

class StepDetector {
 public:
  static constexpr uint32_t kHistory = 8192;   // events kept, power of two
  static constexpr uint32_t kMaxPeriod = 4096;  // longest step, in events
  static constexpr uint32_t kMinWindow = 32;    // fewest events a period is verified over

  // Feeds one allocation event. Returns true when this event is the first of a new step.
  bool observe(uint64_t site, uint32_t live_objects, uint64_t live_bytes, uint64_t size) noexcept;
  // The program says a new step begins with the next allocation event.
  void mark_step() noexcept;
  // End of the run: counts the step in progress if it is complete.
  void finish() noexcept;

  bool locked() const noexcept { return locked_ || explicit_; }
  bool explicit_marks() const noexcept { return explicit_; }
  uint32_t period() const noexcept { return period_; }
  // Index of the step in progress (0 = first step seen), or -1 while no step is known.
  int64_t step_index() const noexcept { return step_index_; }
  // Position of the latest event in its step (the step clock), valid when step_index() >= 0.
  uint32_t event_in_step() const noexcept { return event_in_step_; }
  uint64_t complete_steps() const noexcept { return complete_steps_; }
  uint64_t events_seen() const noexcept { return total_events_; }
  // Allocations and bytes of the last complete step.
  uint32_t last_step_objects() const noexcept { return last_step_objects_; }
  uint64_t last_step_bytes() const noexcept { return last_step_bytes_; }
  uint64_t relocks() const noexcept { return relocks_; }

  // Calls fn(site, live_objects, live_bytes, size) for each event still in the history, oldest first.
  template <typename Fn>
  void for_each_event(Fn fn) const noexcept {
    const uint64_t first = total_events_ > kHistory ? total_events_ - kHistory : 0;
    for (uint64_t q = first; q < total_events_; ++q) {
      const Event& e = at(q);
      fn(e.site, e.live_objects, e.live_bytes, e.size);
    }
  }

 private:
  struct Event {
    uint64_t site;
    uint64_t live_bytes;
    uint64_t size;
    uint32_t live_objects;
  };
  const Event& at(uint64_t pos) const noexcept { return history_[pos & (kHistory - 1)]; }
  bool verify(uint64_t t, uint32_t p) const noexcept;
  bool verify_over(uint64_t t, uint32_t p, uint64_t window, bool allow_shift) const noexcept;
  bool try_switch(uint64_t t, const uint64_t* previous) noexcept;
  void try_lock(uint64_t t, const uint64_t* previous) noexcept;
  void lock_on(uint64_t t, uint32_t p) noexcept;
  bool is_boundary(uint64_t site) noexcept;
  void begin_step(uint64_t site, uint64_t size) noexcept;
  void advance(uint64_t site, uint64_t size) noexcept;
  void close_step(bool at_exit) noexcept;
  bool segment_complete(uint64_t from, uint64_t to) const noexcept;
  void remember_site(uint64_t site, uint64_t pos, uint64_t* previous) noexcept;

  Event history_[kHistory] = {};
  uint64_t total_events_ = 0;

  // Last positions of each call-site: candidates for the period.
  static constexpr uint32_t kSiteSlots = 4096;
  static constexpr uint32_t kPositionsPerSite = 4;
  struct SiteSlot {
    uint64_t site;
    uint64_t pos[kPositionsPerSite];  // pos + 1; 0 = empty
  };
  SiteSlot sites_[kSiteSlots] = {};

  bool locked_ = false;
  bool explicit_ = false;
  bool mark_pending_ = false;
  uint32_t period_ = 0;
  uint64_t cycle_[kMaxPeriod] = {};  // call-sites of one step, from its first event
  uint64_t anchor_site_ = 0;
  uint32_t anchor_per_step_ = 1;     // occurrences of the anchor site per step
  uint32_t anchor_seen_ = 0;         // occurrences in the current step
  uint64_t counted_until_ = 0;       // history positions before this were already counted

  int64_t step_index_ = -1;
  uint32_t event_in_step_ = 0;
  uint32_t step_matches_ = 0;
  uint32_t step_events_ = 0;
  uint64_t step_bytes_ = 0;
  uint32_t failed_steps_in_row_ = 0;
  uint64_t complete_steps_ = 0;
  uint32_t last_step_objects_ = 0;
  uint64_t last_step_bytes_ = 0;
  uint64_t relocks_ = 0;
};

}  // namespace sentinel
