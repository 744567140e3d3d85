// Finds the training step in the stream of large allocations.
//
// What a step is here. Training repeats itself: every optimizer step allocates from the same call-sites
// in the same order. But the number of allocations need not repeat: a recurrent net runs its time loop
// as many times as the batch is long, a model may get a smaller last batch, a validation pass or a
// checkpoint save may run between two steps. So a step is identified by WHICH call-sites it allocates
// from and in what order they first appear, not by its length. Steps are delimited by an anchor: a
// call-site that starts the step (the first allocation after the point where the fewest objects are
// alive, normally the input batch), or every n-th occurrence of it when it occurs n times per step
// (micro-batches of gradient accumulation).
//
// Work between objects. Each event carries small_before: the requests below the object threshold the
// allocating thread made since its previous object. A step's boundary is a long stretch of such work (the
// forward pass of a small batch, whose activations are all below the threshold, the optimizer step, the
// loop's own code); the gap between the objects of one layer's backward is short. Where the objects alone
// repeat with a shorter period than the step (an MLP whose only objects are its three same-sized weight
// gradients: one call-site, one size, the same live counts), the work before each tells them apart.
//
// How the step is found (two ways; whichever succeeds first):
//  1. Exact repetition: a period p such that over the last max(p, 32) events the call-site, the
//     number of live objects and the work before each event (alike_work: within a factor of two) equal
//     those p events earlier (at most 10% mismatches). Candidates are the distances to the last four
//     occurrences of the call-site, and of the call-site after work of the same order of magnitude.
//     Comparing live objects rejects the period of one layer inside a stack of identical layers
//     (activations stay alive, so the count grows from layer to layer and only repeats per step).
//     Live bytes are not compared, so a step whose tensors change size (batch size) still repeats.
//     Before anything is locked, the window must also reach the high point of memory since the last low
//     point before it (spans_the_swing): a loop inside the backward pass (a recurrent net's time loop)
//     repeats exactly long before the step has been seen twice, but below the forward pass's peak.
//     A flat loop (one tensor per iteration) has period 1: nothing higher precedes it.
//     The step then starts where the fewest bytes are alive, moved to a call-site that occurs once per
//     step if one follows within p/4 events.
//  2. Same shape: a call-site s whose occurrences t2 < t1 < t (every one; or every second one when s
//     recurs sooner than 32 events, as a site used once per layer of a two-layer net) bound two segments
//     of at least 32 events each, where s begins at a low point of memory (at t1 and t2 at most
//     kLowSlack more objects are alive than at t, and no event of either segment has kLowSlack fewer),
//     and at least 90% of the distinct call-sites of either segment occur in both. Distinct call-sites
//     do not depend on how often a loop runs, so this holds for steps whose inner loops run a different
//     number of times (variable sequence length), and not for iterations of an inner loop (too short, or
//     not at a low point). Similarity rather than equality, and s must allocate at least twice the
//     smallest size seen, because a tensor whose size varies may be an object (at or above the
//     runtime's threshold) in one step and too small in the next.
// A structure whose anchor occurs several times in it is cut to its first part when that part, from the
// anchor to its next occurrence, has every counted call-site of the whole and both begin at its lowest
// count of live objects: the rest only repeats what the step does (an evaluation pass whose batch comes
// from the input's call-site). A micro-batch lacks the optimizer's call-sites and is not cut off.
// While locked, both searches go on. A structure found later replaces the locked one only if more than
// 10% of its events (distinct call-sites for 2.) come from call-sites the locked step does not have, and
// either it contains at least 90% of the locked step's call-sites (the locked one was an inner loop of
// it: the time loop of a recurrent net, locked first, gives way to the whole step) or the locked step
// has not completed for 4 * period() + kStaleEvents events (the program does something else now: a
// second model is re-detected). A multiple of the step, an evaluation pass (its forward is part of the
// step), a step of another length or another inner loop of the step never replace it. On a switch the
// steps still in the history are counted again under the new structure; relocks() counts switches.
// One exception: a structure that replaces the locked one and is a multiple of its length, whose events
// repeat at the locked length too (at most 10% differ), is the same step under new call-sites (a model
// wrapped in torch.compile changes the call-site of its compiled forward's allocations once, a few steps
// in): the locked length is kept, with the new call-sites, and the steps completed before it are kept
// rather than counted again (a period equal to the locked one is never proposed, so its multiple is what
// verifies).
//
// A step is complete when at least 90% of the distinct call-sites of the learned step occurred in it
// (counting only call-sites with an allocation of at least twice the smallest size seen, see 2.).
// Extra events (a validation pass, a checkpoint save, stray allocations) do not make it incomplete;
// an evaluation pass that begins with the anchor call-site starts a "step" that is not complete (no
// backward call-sites) and is not counted. The step structure is never dropped because of such
// stretches: only a new structure (above) replaces it. Known limit: a step whose optimizer makes no
// large allocation and frees nothing (SGD without weight decay under gradient accumulation, gradients
// zeroed in place) cannot be told from its micro-batches; the detector then counts micro-batches.
// The explicit marker is the way out there.
//
// Tags and sizes: the runtime tags an object by (call-site, occurrence in the step), independently of
// its size, so the same tensor keeps its tag when its size changes from step to step; the profile
// records each tag's largest size (ProfileBuilder), i.e. the per-step maximum.
//
// An explicit marker (mark_step) overrides detection for the rest of the run: every marked segment is
// one step. (From Python: ctypes.CDLL(None).sentinel_step_begin() with libsentinel.so preloaded; see
// include/sentinel/sentinel.h.)
//
// Cost per observe() call, bounded: candidates are verified incrementally, spread over calls, with the newest
// event compared as it arrives. At most kPeriodJobs * (kCompareBudget + 1) = 132 event pairs compared for
// period candidates, kShapeBudget = 128 events of shape verification, two 16-probe site lookups and O(1) step
// bookkeeping. Rarely, one call does more, once per decision: a candidate that verifies while locked scans
// its p <= kMaxPeriod events (does it contain the locked step?); one that verifies before the first lock
// scans at most kSwingLookback + max(p, 32) events (spans_the_swing; after a rejection nothing locks until the
// rejected window has passed: at most one such scan per 32 events); and the call that locks or switches
// builds the cycle tables (clears kCycleSlots = 32,768 slots, p events) and recounts the history (kHistory =
// 32,768 events); this happens a handful of times per run. A period of more than kExactFrom events that
// verifies is first checked against its neighbours (exact_period): p events, then each of at most
// 2 * kExactReach neighbours until it mismatches more often than the best so far (a few events each when one
// of them repeats exactly).
//
// Thread safety: none; the caller serialises calls. Never allocates (fixed arrays); no system calls.
#pragma once

#include <cstdint>

#include "core/step_clock.h"

namespace sentinel {

class StepDetector {
 public:
  static constexpr uint32_t kMaxPeriod = StepClock::kMaxPeriod;  // longest step, in events
  static constexpr uint32_t kHistory = 2 * kMaxPeriod;  // events kept, power of two
  static constexpr uint32_t kMinWindow = 32;    // fewest events a period is verified over
  static constexpr uint32_t kPeriodJobs = 4;    // period candidates verified at once
  static constexpr uint32_t kCompareBudget = 32;  // older events compared per candidate per call
  static constexpr uint32_t kShapeBudget = 128;   // events of shape verification per call
  static constexpr uint32_t kStaleEvents = 64;    // see replaces_locked()
  static constexpr uint32_t kWorkSlack = 8;       // see alike_work()
  // How far back spans_the_swing() looks for the low point before a window (what it was when kMaxPeriod was
  // 4096: a start-up peak of memory delays the first lock until it is this many events old, no longer).
  static constexpr uint32_t kSwingLookback = 4096;
  // Periods longer than kExactFrom that verify are moved to the neighbour within kExactReach (and p / 16)
  // events that repeats best (exact_period()).
  static constexpr uint32_t kExactFrom = 256;
  static constexpr uint32_t kExactReach = 256;

  // Feeds one allocation event. `small_before`: allocations below the object threshold that the
  // allocating thread made since its previous object (see "Work between objects" above; 0 when unknown, as
  // in traces recorded before it was measured, which makes all work alike). Returns true when this event is
  // the first of a new step.
  bool observe(uint64_t site, uint32_t live_objects, uint64_t live_bytes, uint64_t size,
               uint32_t small_before = 0) noexcept;
  // The program says a new step begins with the next allocation event.
  void mark_step() noexcept;
  // End of the run: counts the step in progress if it is complete.
  void finish() noexcept;

  bool locked() const noexcept { return clock_.locked(); }
  bool explicit_marks() const noexcept { return clock_.explicit_marks(); }
  // Events of the learned step (with explicit marks: of the last marked step).
  uint32_t period() const noexcept { return clock_.period(); }
  // Index of the step in progress: the number of complete steps before it (so an off-cycle stretch
  // that began like a step and was not complete does not use up an index). -1 while no step is known.
  int64_t step_index() const noexcept { return clock_.step_index(); }
  // Position of the latest event in its step (the step clock), valid when step_index() >= 0. It counts
  // every event since the step's first, on-cycle or not, and may exceed period() in a longer step.
  uint32_t event_in_step() const noexcept { return clock_.event_in_step(); }
  // True when the latest event is where the learned step expects it: locked (or marked), its position
  // event_in_step() is inside the learned step and the learned step has this event's call-site there.
  // False for events of an evaluation pass, a checkpoint save or any deviation once they differ from the
  // step, and after an inner loop that ran a different number of times than in the learned step (the
  // positions after it are shifted). An evaluation pass that replays the forward part of the step from
  // the anchor on is on-cycle as long as it matches. With explicit marks: the position matches the
  // call-sites of the last marked step.
  bool on_cycle() const noexcept { return clock_.on_cycle(); }
  uint64_t complete_steps() const noexcept { return clock_.complete_steps(); }
  uint64_t events_seen() const noexcept { return total_events_; }
  // Allocations and bytes of the last complete step.
  uint32_t last_step_objects() const noexcept { return clock_.last_step_objects(); }
  uint64_t last_step_bytes() const noexcept { return clock_.last_step_bytes(); }
  // How many times a new step structure replaced the locked one.
  uint64_t relocks() const noexcept { return clock_.relocks(); }
  // The event (counted from 0 over the run) at which the detector last locked or switched structure.
  uint64_t lock_event() const noexcept { return clock_.lock_event(); }
  // The clock part of the detector (all of its state but the search's): what the runtime's own clock
  // copies when the search, run off the allocation path, locks or switches (step_tracker.h).
  const StepClock& clock() const noexcept { return clock_; }
  // The smallest object size seen (about the runtime's object threshold).
  uint64_t smallest_size() const noexcept { return smallest_size_; }

  // Calls fn(site, live_objects, live_bytes, size, small_before) for each event still in the history,
  // oldest first.
  template <typename Fn>
  void for_each_event(Fn fn) const noexcept {
    for_each_event_since(0, fn);
  }
  // The same for the events from `first` (counted from 0 over the run) on that are still in the history.
  template <typename Fn>
  void for_each_event_since(uint64_t first, Fn fn) const noexcept {
    const uint64_t oldest = total_events_ > kHistory ? total_events_ - kHistory : 0;
    for (uint64_t q = first > oldest ? first : oldest; q < total_events_; ++q) {
      const Event& e = at(q);
      fn(e.site, e.live_objects, e.live_bytes, e.size, e.small_before);
    }
  }

 private:
  struct Event {
    uint64_t site;
    uint64_t live_bytes;
    uint64_t size;
    uint32_t live_objects;
    uint32_t small_before;
  };
  // A period candidate being verified over the events before and after the one that proposed it.
  struct PeriodJob {
    uint32_t period = 0;  // 0 = free slot
    uint64_t oldest;      // oldest event that still has to be compared (going back)
    uint64_t stop;        // the window begins here
    uint32_t compared = 0;
    uint32_t mismatches = 0;
    uint32_t foreign = 0;  // compared events whose call-site the locked step does not have
    // A lock since the job began: `foreign` mixes answers for two structures and is counted again, over
    // the whole window, when the job verifies (recount_foreign).
    bool foreign_stale = false;
  };
  // A same-shape candidate: segments [a, b) and [b, c), c the anchor event.
  struct ShapeJob {
    bool active = false;
    uint64_t a, b, c, cursor;
    uint32_t serial;  // marks this job's entries in shape_sites_
    uint32_t distinct_a, distinct_b, common;
    uint32_t foreign;  // distinct call-sites of [b, c) the locked step does not have
    uint32_t per_step;  // occurrences of the candidate site per segment
  };
  // Objects that may be alive below an anchor's count in its step: the step's low point may come a few
  // allocations before or after the anchor (the previous input batch is freed late, small tensors
  // cross the object threshold or not). A layer of a network leaves more objects than this alive.
  static constexpr uint32_t kLowSlack = 3;
  struct ShapeSite {
    uint64_t site;
    uint32_t in_a, in_b;  // serial of the job that saw the site in segment [a, b), [b, c)
  };
  using CycleSite = StepClock::CycleSite;
  static constexpr uint32_t kCycleSlots = StepClock::kCycleSlots;

  const Event& at(uint64_t pos) const noexcept { return history_[pos & (kHistory - 1)]; }
  bool same(uint64_t p, uint64_t q) const noexcept {
    return at(p).site == at(q).site && at(p).live_objects == at(q).live_objects &&
           alike_work(at(p).small_before, at(q).small_before);
  }
  // Whether two stretches of work between objects (small_before) are alike: within a factor of two, plus
  // a few requests of slack (the loop's own Python code may allocate a little more or less in one step).
  // A step boundary (a forward pass, an optimizer step) is far longer than the gap between the objects
  // of one layer's backward, and stays about the same from step to step.
  static bool alike_work(uint32_t a, uint32_t b) noexcept {
    const uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    return hi <= 2 * lo + kWorkSlack;
  }
  struct SiteSlot;
  void remember_site(SiteSlot* table, uint64_t site, uint64_t pos, uint64_t* previous) noexcept;
  void propose_periods(uint64_t t, const uint64_t* previous) noexcept;
  void run_period_jobs(uint64_t t) noexcept;
  void propose_shape(uint64_t t, const uint64_t* previous) noexcept;
  void run_shape_job(uint64_t t) noexcept;
  ShapeSite* find_shape_site(uint64_t site) noexcept;
  bool spans_the_swing(uint64_t t, uint32_t p) const noexcept;
  void lock_on_period(uint64_t t, uint32_t p) noexcept;
  bool lock_on_part(uint64_t t, uint64_t start, uint32_t p) noexcept;
  void lock(uint64_t t, uint64_t start, uint64_t cycle_from, uint32_t p, uint64_t anchor,
            uint32_t anchor_per_step) noexcept;
  void build_cycle(uint64_t cycle_from, uint32_t p) noexcept;
  uint32_t coverage_between(uint64_t from, uint64_t to) noexcept;
  bool replaces_locked(uint64_t t, uint32_t p) noexcept;
  bool contains_locked(uint64_t t, uint32_t p) noexcept;
  uint32_t foreign_repeats(uint64_t t, uint32_t p) noexcept;
  bool repeats_within(uint64_t t, uint32_t p, uint32_t q) const noexcept;
  bool foreign_repeats_at_period(uint64_t t, uint32_t p) noexcept;
  bool on_verified(uint64_t t, const PeriodJob& done) noexcept;
  void recount_foreign(uint64_t t, PeriodJob* job) noexcept;
  uint32_t exact_period(uint64_t t, uint32_t p) const noexcept;
  uint32_t mismatches_over(uint64_t t, uint32_t q, uint32_t give_up) const noexcept;
  bool foreign(uint64_t q) noexcept;

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
  // The same, by call-site and the order of magnitude of the work before it (work_class()).
  SiteSlot work_sites_[kSiteSlots] = {};
  // Bit length of small_before: alike_work() work falls in the same class or a neighbouring one.
  static uint32_t work_class(uint32_t small_before) noexcept {
    return small_before == 0 ? 0 : 32 - static_cast<uint32_t>(__builtin_clz(small_before));
  }

  PeriodJob jobs_[kPeriodJobs] = {};
  ShapeJob shape_ = {};
  ShapeSite shape_sites_[kCycleSlots] = {};  // call-sites of the shape job's segments
  uint32_t shape_serial_ = 0;
  uint64_t smallest_size_ = UINT64_MAX;  // of any event: about the runtime's object threshold

  uint32_t unspanned_period_ = 0;  // the period last rejected by spans_the_swing(): not proposed, and
  uint64_t unspanned_until_ = 0;   // no period locked, before this event

  // How lock() counts the steps in the history: all of them again (keep false), or keeping the complete
  // steps counted so far and counting from event `from` on, where what precedes the first step start counts
  // as a step only if `lead` (not when it is the end of a step counted already).
  struct Recount {
    bool keep = false;
    uint64_t from = 0;
    bool lead = true;
  };
  Recount recount_;
  uint32_t search_serial_ = 0;     // marks of coverage_between() and lock_on_part() (CycleSite::search_mark)
  // foreign(): per history event, (cycle_epoch_ << 1 | foreign) for the cycle of that epoch.
  uint32_t foreign_marks_[kHistory] = {};
  uint32_t cycle_epoch_ = 1;       // build_cycle() calls + 1
  StepClock clock_;
};

}  // namespace sentinel
