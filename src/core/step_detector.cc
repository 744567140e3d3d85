#include "core/step_detector.h"

#include <algorithm>

#include "core/hash.h"

namespace sentinel {

void StepDetector::remember_site(SiteSlot* table, uint64_t site, uint64_t pos, uint64_t* previous) noexcept {
  uint32_t at = static_cast<uint32_t>(mix64(site)) & (kSiteSlots - 1);
  for (uint32_t probe = 0; probe < 16; ++probe, at = (at + 1) & (kSiteSlots - 1)) {
    SiteSlot& s = table[at];
    if (s.pos[0] != 0 && s.site != site) continue;
    s.site = site;
    for (uint32_t k = 0; k < kPositionsPerSite; ++k) previous[k] = s.pos[k];
    for (uint32_t k = kPositionsPerSite - 1; k > 0; --k) s.pos[k] = s.pos[k - 1];
    s.pos[0] = pos + 1;
    return;
  }
  // Table crowded: this site contributes no candidates. Detection still works from others.
  for (uint32_t k = 0; k < kPositionsPerSite; ++k) previous[k] = 0;
}

// The learned step: the p events from cycle_from, and the table of their distinct call-sites.
void StepDetector::build_cycle(uint64_t cycle_from, uint32_t p) noexcept {
  ++cycle_epoch_;  // every event's foreign() answer is stale now
  for (CycleSite& c : clock_.cycle_sites_) c = CycleSite{};
  uint32_t distinct = 0;
  clock_.cycle_distinct_ = 0;
  for (uint32_t k = 0; k < p; ++k) {
    const Event& e = at(cycle_from + k);
    clock_.cycle_[k] = e.site;
    CycleSite* c = clock_.find_cycle_site(e.site);
    if (c->per_step == 0) {
      c->site = e.site;
      ++distinct;
    }
    ++c->per_step;
    // Completeness counts only call-sites whose tensors are well above the object threshold: one
    // close to it may be too small to be an object in a step with smaller shapes.
    if (!c->counted && e.size >= 2 * smallest_size_) {
      c->counted = true;
      ++clock_.cycle_distinct_;
    }
  }
  // Unless that leaves too few: then no tensor is much larger than the others, and all count.
  if (clock_.cycle_distinct_ * 2 < distinct) {
    for (CycleSite& c : clock_.cycle_sites_) c.counted = c.per_step != 0;
    clock_.cycle_distinct_ = distinct;
  }
  clock_.period_ = p;
}

// Whether the event at q has a call-site the learned step does not have. Verifying a period compares each
// event of its window, and several candidates verify at once, so the answer is kept with the event (for
// the cycle it was computed against): one table probe per event and cycle instead of one per comparison.
bool StepDetector::foreign(uint64_t q) noexcept {
  uint32_t& mark = foreign_marks_[q & (kHistory - 1)];
  if ((mark >> 1) != cycle_epoch_) {
    mark = cycle_epoch_ << 1 | (clock_.find_cycle_site(at(q).site)->per_step == 0 ? 1u : 0u);
  }
  return (mark & 1) != 0;
}

// Distinct counted call-sites of the learned step among the events [from, to). Uses a fresh serial.
uint32_t StepDetector::coverage_between(uint64_t from, uint64_t to) noexcept {
  const uint32_t mark = ++search_serial_;
  uint32_t covered = 0;
  for (uint64_t q = from; q < to; ++q) {
    CycleSite* c = clock_.find_cycle_site(at(q).site);
    if (c->counted && c->search_mark != mark) {
      c->search_mark = mark;
      ++covered;
    }
  }
  return covered;
}

// --- exact repetition --------------------------------------------------------------------------

void StepDetector::propose_periods(uint64_t t, const uint64_t* previous) noexcept {
  for (uint32_t k = 0; k < kPositionsPerSite; ++k) {
    if (previous[k] == 0) continue;
    const uint64_t p = t - (previous[k] - 1);
    if (p == 0 || p > kMaxPeriod || (clock_.locked_ && p == clock_.period_)) continue;
    if (!clock_.locked_ && p == unspanned_period_ && t < unspanned_until_) continue;
    const uint64_t window = p > kMinWindow ? p : kMinWindow;
    // The oldest event compared must stay in the history until the job ends (window / budget calls).
    if (t + 1 < window + p || window + p + window / kCompareBudget + 2 > kHistory) continue;
    if (!same(t, t - p)) continue;
    PeriodJob* free_slot = nullptr;
    bool known = false;
    for (PeriodJob& j : jobs_) {
      if (j.period == p) known = true;
      if (j.period == 0 && free_slot == nullptr) free_slot = &j;
    }
    if (known || free_slot == nullptr) continue;
    *free_slot = PeriodJob{static_cast<uint32_t>(p), t - 1, t + 1 - window, 1, 0, 0};
    if (clock_.locked_ && clock_.find_cycle_site(at(t).site)->per_step == 0) free_slot->foreign = 1;
  }
}

void StepDetector::run_period_jobs(uint64_t t) noexcept {
  for (PeriodJob& j : jobs_) {
    if (j.period == 0) continue;
    const uint32_t p = j.period;
    auto compare = [&](uint64_t q) {
      ++j.compared;
      if (!same(q, q - p)) ++j.mismatches;
      if (clock_.locked_ && !j.foreign_stale && foreign(q)) ++j.foreign;  // a stale job counts them again
    };
    // The newest event, unless the job was proposed by it.
    if (j.oldest + 1 != t && j.compared > 0) compare(t);
    for (uint32_t n = 0; n < kCompareBudget && j.oldest >= j.stop; ++n) compare(j.oldest--);
    const uint64_t window = p > kMinWindow ? p : kMinWindow;
    if (j.mismatches > window / 10) {
      j.period = 0;  // does not repeat
      continue;
    }
    if (j.oldest >= j.stop) continue;
    PeriodJob done = j;
    j.period = 0;
    if (done.mismatches * 10 > done.compared) continue;
    if (done.foreign_stale) recount_foreign(t, &done);
    done.period = exact_period(t, p);
    if (clock_.locked_ && done.period == clock_.period_) continue;  // the locked step, proposed a few events off
    if (on_verified(t, done)) return;
  }
}

// Counts a job's foreign events again against the structure locked now, over the events it compared: its
// window [stop, t]. Scans p events, once per decision.
void StepDetector::recount_foreign(uint64_t t, PeriodJob* job) noexcept {
  job->foreign_stale = false;
  if (!clock_.locked_) return;
  job->compared = static_cast<uint32_t>(t + 1 - job->stop);
  job->foreign = 0;
  for (uint64_t q = job->stop; q <= t; ++q) job->foreign += foreign(q) ? 1 : 0;
}

// Decides on a period that verified (`done`, its period made exact): locks it, lets it replace the locked
// step, or drops it. True when it locked.
bool StepDetector::on_verified(uint64_t t, const PeriodJob& done) noexcept {
  const uint32_t p = done.period;
  {
    if (!clock_.locked_) {
      // An inner loop of the step (a recurrent net's time loop in the backward pass) repeats exactly too,
      // but only over part of the step's swing of memory: it is not locked, the whole step will verify.
      // After a rejection, nothing locks before the window has moved past the rejected one (the loop may
      // run for a while; a candidate dropped here is proposed again): at most one scan per 32 events.
      if (t < unspanned_until_) return false;
      if (!spans_the_swing(t, p)) {
        unspanned_period_ = p;
        unspanned_until_ = t + (p > kMinWindow ? p : kMinWindow);
        return false;
      }
      lock_on_period(t, p);
      return true;
    }
    // A structure with call-sites the locked step does not have: the locked one was an inner loop,
    // or the program changed. Or a structure of at least two locked steps plus a few allocations of
    // its own: the locked steps were the micro-batches of gradient accumulation, and the few
    // allocations the optimizer's. Anything else (a multiple of the step, an evaluation pass, a step
    // of another length) is the same step.
    const bool many_foreign = done.foreign * 10 > done.compared;
    // (Those few foreign allocations are at least what the structure adds to whole locked steps; an
    // evaluation pass every few steps adds mostly forward allocations, known ones.)
    uint64_t foreign_per_period = (uint64_t{done.foreign} * p + done.compared - 1) / done.compared;
    // A structure that is itself several repeats of a shorter one (two checkpoints, each of one
    // allocation every ten steps) is judged by one repeat: one stray per repeat is not an optimizer's.
    uint32_t unit = p;
    if (!many_foreign && p >= 2 * clock_.period_ && foreign_per_period >= 2) {
      const uint32_t repeats = foreign_repeats(t, p);
      unit = p / repeats;
      foreign_per_period /= repeats;
    }
    // What the structure adds to the whole locked steps that fit in it must be its own allocations. Half
    // of it was enough before: a U-Net with a validation pass every 4 steps (121 events, known call-sites)
    // and a checkpoint every 6 then verified its cycle of 12 steps and 5 passes (4,427 events, 56 of them
    // its own), which fits 13 steps and 124 events, and replaced its step of 331 in the 30th step.
    const uint64_t extra = unit % clock_.period_;
    // At least two such allocations: a stray allocation shifts the events after it by one, so p + 1
    // may verify for a while with the stray as its one foreign event.
    const bool closes_micro_batches =
        unit >= 2 * clock_.period_ && extra > 0 && foreign_per_period >= 2 && foreign_per_period >= extra;
    const bool replaces = many_foreign && replaces_locked(t, p);
    if (replaces && p % clock_.period_ == 0 && !contains_locked(t, p) && repeats_within(t, p, clock_.period_)) {
      // The locked step again, under new call-sites: a period equal to the locked one is never proposed, so
      // its multiples verify first (two steps of a torch.compile'd model, whose forward allocations changed
      // call-site once). The step keeps its length and the steps counted under the old call-sites. Not when
      // the structure contains the locked one: then that was a loop inside it (a run of one scratch buffer
      // locked as a period of 1 in ViT-B/16's step of 94% such runs, which repeats at 1 too).
      // The step in progress under the old call-sites (it began at the old anchor and no old anchor came
      // since) ends where the first step under the new ones begins: counted now if it is complete.
      ++clock_.relocks_;
      const uint64_t in_progress = clock_.events_ - clock_.step_events_;
      const bool was_complete = clock_.step_events_ > 0 && clock_.step_complete(false);
      if (was_complete) ++clock_.complete_steps_;
      recount_ = Recount{true, in_progress + (was_complete ? 1 : 0), !was_complete};
      lock_on_period(t, clock_.period_);
      recount_ = Recount{};
      return true;
    }
    if (replaces || (closes_micro_batches && contains_locked(t, p) && foreign_repeats_at_period(t, p))) {
      ++clock_.relocks_;
      lock_on_period(t, p);
      return true;
    }
  }
  return false;
}

// Mismatches (events unlike the one q earlier) among the last q events up to t; stops counting past give_up.
uint32_t StepDetector::mismatches_over(uint64_t t, uint32_t q, uint32_t give_up) const noexcept {
  uint32_t mismatches = 0;
  for (uint64_t e = t + 1 - q; e <= t && mismatches <= give_up; ++e) mismatches += same(e, e - q) ? 0 : 1;
  return mismatches;
}

// The period among p and its neighbours (within kExactReach and p / 16 events) whose last window repeats
// best. When nearly all of a step's events are runs of one call-site (ViT-B/16 at batch 16 on PyTorch 1.13:
// 99% runs of 192 scratch buffers), a period a few events off mismatches only at the ends of the runs, under
// the 10% a verification allows: a call-site used n times at the end of the step proposes p - n + 1 from its
// first occurrence in the next step (SGD's 8 temporaries: 13,937 for 13,944), and verifies before p. Ties keep
// p; a neighbour that does not fit the history twice is not tried.
uint32_t StepDetector::exact_period(uint64_t t, uint32_t p) const noexcept {
  if (p <= kExactFrom) return p;
  const uint64_t oldest = t + 1 > kHistory ? t + 1 - kHistory : 0;
  const uint32_t reach = std::min(kExactReach, p / 16);
  uint32_t best = p;
  uint32_t fewest = mismatches_over(t, p, p);
  for (uint32_t d = 1; d <= reach && fewest > 0; ++d) {
    for (const uint32_t q : {p - d, p + d}) {
      if (q > kMaxPeriod || t + 1 < oldest + 2 * uint64_t{q}) continue;
      const uint32_t m = mismatches_over(t, q, fewest);
      if (m < fewest) {
        fewest = m;
        best = q;
      }
    }
  }
  return best;
}

// Whether the last p events up to t repeat with the shorter period q (a divisor of p): at most one in ten
// differs from the event q earlier, as in a period's verification. Scans p events, once per decision.
bool StepDetector::repeats_within(uint64_t t, uint32_t p, uint32_t q) const noexcept {
  if (q == 0 || q >= p) return false;
  uint32_t mismatches = 0;
  for (uint64_t e = t + 1 - p; e <= t; ++e) mismatches += same(e, e - q) ? 0 : 1;
  return mismatches * 10 <= p;
}

// Whether the foreign allocations (call-sites the locked step does not have) of the last p events up to t
// are part of what repeats: at least 9 in 10 of them equal the event p earlier. The micro-batch rule asks
// it. An optimizer's allocations after the micro-batches come at every unit; allocations of a pass that runs
// every few steps can make a structure of two steps plus them verify over one window by chance, as the
// mismatches the verification allows: a U-Net with a validation pass every 4 steps (121 events) and a
// checkpoint every 6 (its 25 loads) verified 687 events, two steps of 331 and the loads, in its 20th step,
// with the loads as the window's 25 mismatches. Scans p events, once per decision.
bool StepDetector::foreign_repeats_at_period(uint64_t t, uint32_t p) noexcept {
  uint32_t count = 0, repeated = 0;
  for (uint64_t q = t + 1 - p; q <= t; ++q) {
    if (!foreign(q)) continue;
    ++count;
    repeated += same(q, q - p) ? 1 : 0;
  }
  return repeated * 10 >= count * 9;
}

// How often the foreign allocations (call-sites the locked step does not have) of the last p events up to
// t repeat within them: the largest r that divides p such that every foreign event has the same call-site
// p / r events earlier (within the p events) and every foreign call-site occurs a multiple of r times. 1
// when they do not repeat (an optimizer's allocations after the micro-batches of one step).
uint32_t StepDetector::foreign_repeats(uint64_t t, uint32_t p) noexcept {
  const uint64_t first = t + 1 - p;
  uint32_t count = 0;
  for (uint64_t q = first; q <= t; ++q) count += foreign(q) ? 1 : 0;
  for (uint32_t r = count; r >= 2; --r) {
    if (p % r != 0 || count % r != 0) continue;
    const uint32_t unit = p / r;
    bool periodic = true;
    for (uint64_t q = first; q <= t && periodic; ++q) {
      if (!foreign(q)) continue;
      // Each foreign event has its twin one unit later or earlier, inside the p events.
      const bool later = q + unit <= t && at(q + unit).site == at(q).site;
      const bool earlier = q >= first + unit && at(q - unit).site == at(q).site;
      periodic = later || earlier;
    }
    if (periodic) return r;
  }
  return 1;
}

// Whether the window a period p verified over (its events that repeat, among the last max(p, kMinWindow) up
// to t) reaches the high point of memory of the stretch that leads to it. Going back from the window to the
// last low point (an event with more than kLowSlack objects fewer alive than anywhere in the window, at most
// kSwingLookback events back), memory may not rise higher than the window does (tolerance below). A training
// step's forward pass builds up its activations and its backward pass frees them: a whole step spans this
// swing, and the step before it (back to the same low point) rose as high. A loop inside the backward pass (a
// recurrent net's time loop) runs with the forward's peak behind it: it is not the step, which verifies
// later. A genuinely short period (a flat loop allocating one tensor per iteration) has no higher peak before
// it. Not caught: a loop before the step's peak (a time loop of the forward pass whose per-step tensors are
// freed at once), which looks like a flat loop until the step goes on; the whole step replaces it once it has
// repeated (replaces_locked). Known cost: a peak of memory before training that exceeds the step's (a data
// set built and freed) delays the first lock until it is kSwingLookback events old. Runs only for a candidate
// that verified while nothing is locked; scans at most kSwingLookback + window events.
bool StepDetector::spans_the_swing(uint64_t t, uint32_t p) const noexcept {
  const uint64_t window = p > kMinWindow ? p : kMinWindow;
  const uint64_t first = t + 1 - window;
  uint64_t low = UINT64_MAX, window_high = 0;
  uint32_t fewest = UINT32_MAX;
  for (uint64_t q = first; q <= t; ++q) {
    if (!same(q, q - p)) continue;  // the few mismatches verification allows (the loop's first events)
    low = std::min(low, at(q).live_bytes);
    window_high = std::max(window_high, at(q).live_bytes + at(q).size);
    fewest = std::min(fewest, at(q).live_objects);
  }
  if (window_high == 0) return true;  // no event repeats (cannot happen after verification)
  const uint64_t oldest = total_events_ > kHistory ? total_events_ - kHistory : 0;
  uint64_t before_high = 0;
  for (uint64_t q = first; q > oldest && first - q < kSwingLookback;) {
    --q;
    if (at(q).live_objects + kLowSlack < fewest) {
      low = std::min(low, at(q).live_bytes);
      break;
    }
    before_high = std::max(before_high, at(q).live_bytes + at(q).size);
  }
  // Higher by more than a quarter of the window's own rise above the low point. Measured on the recorded
  // traces: the time loops of GRU/LSTM backward passes 0.31-2.1 of it; a start-up temporary just before a
  // genuine 4-event step (a GRU classifier at 64 KiB objects) 0.17.
  const uint64_t above = before_high > window_high ? before_high - window_high : 0;
  return 4 * above <= window_high - low;
}

void StepDetector::lock_on_period(uint64_t t, uint32_t p) noexcept {
  const uint64_t first = t + 1 - p;  // the last p events form one full cycle
  build_cycle(first, p);  // for the occurrence counts, which do not depend on the rotation
  auto per_step = [&](uint64_t q) { return clock_.find_cycle_site(at(q).site)->per_step; };
  // Bytes freed since the previous event, counting that event's own object (a temporary gone by now).
  auto drop = [&](uint64_t q) {
    const uint64_t before = at(q - 1).live_bytes + at(q - 1).size;
    return static_cast<int64_t>(before) - static_cast<int64_t>(at(q).live_bytes);
  };
  // The step starts where the fewest object bytes are alive; among equals, at the call-site that
  // occurs least often per step (an evaluation pass between steps starts at the same level, from a
  // call-site of the forward pass), then as below.
  uint64_t start = first;
  for (uint64_t q = first; q <= t; ++q) {
    const uint64_t bq = at(q).live_bytes, bs = at(start).live_bytes;
    if (bq != bs) {
      if (bq < bs) start = q;
      continue;
    }
    const uint32_t nq = per_step(q), ns = per_step(start);
    if (nq != ns) {
      if (nq < ns) start = q;
      continue;
    }
    // Then right after the biggest drop. Among occurrences of one call-site with nothing else to tell
    // them apart (the weight gradients of equal layers, the only objects of a small-batch MLP): the one
    // after the longest work without objects, the step's first, after the forward pass.
    const bool same_place = drop(q) == drop(start) && at(q).site == at(start).site;
    if (drop(q) > drop(start) || (same_place && at(q).small_before > at(start).small_before)) start = q;
  }
  auto cyclic = [&](uint64_t q) { return first + (q - first) % p; };
  uint32_t count = per_step(start);
  // Prefer a call-site that occurs once per step, if one follows closely: it resynchronises by itself.
  for (uint64_t k = 0; k <= p / 4 && count > 1; ++k) {
    const uint64_t q = cyclic(start + k);
    if (per_step(q) == 1) {
      start = q;
      count = 1;
    }
  }
  if (count > 1 && lock_on_part(t, start, p)) return;
  lock(t, start, start - p, p, at(start).site, count);
}

// A period whose anchor occurs several times may be a step plus something that only repeats what the
// step does (an evaluation pass every step or two, beginning with a call-site of the step): if the
// events from the anchor to its next occurrence already have every counted call-site of the period,
// that part is the step, and the rest is an off-cycle tail. Gradient accumulation is not cut this way:
// a micro-batch lacks the optimizer's call-sites. Scans p events; true if it locked.
bool StepDetector::lock_on_part(uint64_t t, uint64_t start, uint32_t p) noexcept {
  const uint64_t from = start - p;  // the last whole cycle before the step in progress
  const uint64_t anchor = at(start).site;
  // Both the step and the tail begin at the cycle's lowest count of live objects (between steps), unlike
  // two layers of a network, whose second begins with the first one's output alive.
  uint32_t lowest = UINT32_MAX, most_work = 0;
  for (uint32_t k = 0; k < p; ++k) {
    lowest = std::min(lowest, at(from + k).live_objects);
    most_work = std::max(most_work, at(from + k).small_before);
  }
  if (at(from).live_objects != lowest) return false;
  // Both begin after work like the longest stretch of the cycle too (work between steps: an optimizer
  // step, the loop's code, an evaluation pass's set-up). An occurrence of the anchor after the short work
  // of a layer is inside the step: the three weight gradients of a small-batch MLP, whose activations are
  // too small to be objects, or the per-parameter temporaries of Adam.
  auto after_long_work = [&](uint64_t q) { return alike_work(at(q).small_before, most_work); };
  if (!after_long_work(from)) return false;
  const uint32_t mark = ++search_serial_;
  uint32_t covered = 0;
  for (uint32_t k = 0; k < p; ++k) {
    const Event& e = at(from + k);
    if (k > 0 && e.site == anchor) {
      if (covered < clock_.cycle_distinct_ || e.live_objects != lowest || !after_long_work(from + k)) return false;
      // The step in progress began at the latest occurrence of the anchor.
      uint64_t latest = start;
      for (uint64_t q = start + 1; q <= t; ++q) {
        if (at(q).site == anchor) latest = q;
      }
      lock(t, latest, from, k, anchor, 1);
      return true;
    }
    CycleSite* c = clock_.find_cycle_site(e.site);
    if (c->counted && c->search_mark != mark) {
      c->search_mark = mark;
      ++covered;
    }
  }
  return false;
}

// --- replacing the locked step ------------------------------------------------------------------

// A new structure with foreign call-sites (the last p events up to t) replaces the locked one if it
// contains the locked one (at least 90% of its call-sites: the locked one was an inner loop of it), or
// if the locked one has completed no step for four of its periods plus kStaleEvents (the program does
// something else now).
// Without the first rule, two inner loops of one step (forward and backward time loops) would take
// turns. Scans p events, once per decision.
bool StepDetector::replaces_locked(uint64_t t, uint32_t p) noexcept {
  return t - clock_.last_complete_event_ > 4 * uint64_t{clock_.period_} + kStaleEvents || contains_locked(t, p);
}

bool StepDetector::contains_locked(uint64_t t, uint32_t p) noexcept {
  return coverage_between(t + 1 - p, t + 1) * 10 >= clock_.cycle_distinct_ * 9;
}

// --- the locked step -------------------------------------------------------------------------------

void StepDetector::lock(uint64_t t, uint64_t start, uint64_t cycle_from, uint32_t p, uint64_t anchor,
                        uint32_t anchor_per_step) noexcept {
  build_cycle(cycle_from, p);
  clock_.anchor_site_ = anchor;
  clock_.anchor_per_step_ = anchor_per_step;
  clock_.start_objects_ = at(start).live_objects;
  clock_.locked_ = true;
  clock_.lock_event_ = t;
  clock_.last_complete_event_ = t;
  // The jobs in verification go on: their comparisons do not depend on the locked structure, only their
  // counts of foreign call-sites do, which are counted again when they verify. (Dropping them, as before,
  // meant that a step longer than the time between two locks never verified: ViT-B/16's step of 14,606
  // events at batch 16 takes 457 events to verify, and its runs of one scratch buffer locked as a period
  // of 1 in turn every ~200 events.)
  for (PeriodJob& j : jobs_) j.foreign_stale = true;
  shape_.active = false;

  // Count the complete steps still in the history, replaying it with the boundary rule of clock_.begins_step()
  // from the first occurrence of the anchor at the start's level of live objects (a step start).
  // From the oldest event, or (recount_.keep) from the step in progress under the structure replaced, keeping
  // the steps counted under it: the same step under new call-sites.
  const uint64_t oldest = std::max(t + 1 > kHistory ? t + 1 - kHistory : 0, recount_.keep ? recount_.from : 0);
  const uint32_t needed = (clock_.cycle_distinct_ * 9 + 9) / 10;
  if (!recount_.keep) clock_.complete_steps_ = 0;
  bool in_step = false;
  uint32_t seen = 0, covered = 0, mark = 0;
  // What precedes the first step start is counted too if it covers the step: when the anchor is the
  // last allocation of a step rather than the first, the first step ends there.
  mark = ++clock_.step_serial_ + 1;
  for (uint64_t q = oldest; q < start; ++q) {
    const Event& e = at(q);
    const bool begins = !in_step ? e.site == clock_.anchor_site_ && e.live_objects <= clock_.start_objects_
                                 : clock_.begins_step(e.site, e.live_objects, seen, covered >= needed);
    if (begins) {
      if (covered >= needed && (in_step || recount_.lead)) ++clock_.complete_steps_;
      in_step = true;
      seen = 1;
      covered = 0;
      mark = ++clock_.step_serial_ + 1;
    } else if (e.site == clock_.anchor_site_) {
      ++seen;
    }
    CycleSite* c = clock_.find_cycle_site(e.site);
    if (c->counted && c->seen_in != mark) {
      c->seen_in = mark;
      ++covered;
    }
  }
  if (covered >= needed && (in_step || recount_.lead)) ++clock_.complete_steps_;

  // The step in progress began at `start`.
  clock_.begin_step(at(start).site, at(start).size);
  for (uint64_t q = start + 1; q <= t; ++q) {
    if (at(q).site == clock_.anchor_site_) ++clock_.anchor_seen_;
    clock_.advance(at(q).site, at(q).size);
  }
}

bool StepDetector::observe(uint64_t site, uint32_t live_objects, uint64_t live_bytes, uint64_t size,
                           uint32_t small_before) noexcept {
  const uint64_t t = total_events_++;
  ++clock_.events_;
  uint64_t previous[kPositionsPerSite];
  remember_site(sites_, site, t, previous);
  // The same call-site after a different amount of work (the first weight gradient of a step, after the
  // forward pass, and the next ones, after a layer's backward) recurs at the step's distance, which the
  // last four occurrences of a site used once per layer of a deep net do not reach.
  uint64_t previous_alike[kPositionsPerSite];
  remember_site(work_sites_, site ^ (uint64_t{work_class(small_before)} << 56), t, previous_alike);
  history_[t & (kHistory - 1)] = Event{site, live_bytes, size, live_objects, small_before};
  foreign_marks_[t & (kHistory - 1)] = 0;  // no cycle's answer yet (cycle_epoch_ >= 1)
  if (size < smallest_size_) smallest_size_ = size;

  if (clock_.marked_or_explicit()) return clock_.observe_marked(site, size);

  const uint64_t relocks_before = clock_.relocks_;
  const bool was_locked = clock_.locked_;
  propose_periods(t, previous);
  propose_periods(t, previous_alike);
  run_period_jobs(t);
  if (!was_locked || clock_.relocks_ == relocks_before) {
    propose_shape(t, previous);
    run_shape_job(t);
  }
  if (clock_.locked_ && (!was_locked || clock_.relocks_ != relocks_before)) {
    return clock_.event_in_step_ == 0;  // lock() has placed this event in its step
  }
  return clock_.observe_locked(site, live_objects, size);
}

void StepDetector::mark_step() noexcept { clock_.mark_step(); }

void StepDetector::finish() noexcept { clock_.finish(); }

}  // namespace sentinel
