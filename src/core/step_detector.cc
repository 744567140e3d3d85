#include "core/step_detector.h"

#include "core/hash.h"

namespace sentinel {

void StepDetector::remember_site(uint64_t site, uint64_t pos, uint64_t* previous) noexcept {
  uint32_t at = static_cast<uint32_t>(mix64(site)) & (kSiteSlots - 1);
  for (uint32_t probe = 0; probe < 16; ++probe, at = (at + 1) & (kSiteSlots - 1)) {
    SiteSlot& s = sites_[at];
    if (s.pos[0] != 0 && s.site != site) continue;
    s.site = site;
    for (uint32_t k = 0; k < kPositionsPerSite; ++k) previous[k] = s.pos[k];
    for (uint32_t k = kPositionsPerSite - 1; k > 0; --k) s.pos[k] = s.pos[k - 1];
    s.pos[0] = pos + 1;
    return;
  }
  // Table crowded: this site contributes no period candidates. Detection still works from others.
  for (uint32_t k = 0; k < kPositionsPerSite; ++k) previous[k] = 0;
}

// A new period must repeat exactly (position by position, at most 10% mismatches): allowing shifted
// partners here would also accept p-1 and p-2 whenever p repeats.
bool StepDetector::verify(uint64_t t, uint32_t p) const noexcept {
  return verify_over(t, p, p > kMinWindow ? p : kMinWindow, false);
}

// With allow_shift, a partner one or two events off also counts, so a stray allocation (which shifts
// everything after it by one event) costs one mismatch instead of a whole period of them. Used only to
// ask whether the period already locked still holds.
bool StepDetector::verify_over(uint64_t t, uint32_t p, uint64_t window, bool allow_shift) const noexcept {
  if (t + 1 < window + p + 2 || window + p + 2 > kHistory) return false;
  const uint64_t allowed = window / 10;
  uint64_t mismatches = 0;
  auto same = [](const Event& a, const Event& b) {
    return a.site == b.site && a.live_objects == b.live_objects && a.live_bytes == b.live_bytes;
  };
  for (uint64_t i = 0; i < window; ++i) {
    const Event& a = at(t - i);
    // Shifted partners only for periods long enough that they are still about one period back.
    const uint64_t q = t - i - p;
    bool matched = same(a, at(q));
    for (uint64_t shift = 1; allow_shift && !matched && shift <= 2 && p >= 4 * shift; ++shift) {
      matched = same(a, at(q - shift)) || same(a, at(q + shift));
    }
    if (!matched && ++mismatches > allowed) return false;
  }
  return true;
}

void StepDetector::try_lock(uint64_t t, const uint64_t* previous) noexcept {
  uint32_t best = 0;
  for (uint32_t k = 0; k < kPositionsPerSite; ++k) {
    const uint64_t q = previous[k];
    if (q == 0) continue;
    const uint64_t p = t - (q - 1);
    if (p == 0 || p > kMaxPeriod || (best != 0 && p >= best)) continue;
    if (verify(t, static_cast<uint32_t>(p))) best = static_cast<uint32_t>(p);
  }
  if (best != 0) lock_on(t, best);
}

bool StepDetector::try_switch(uint64_t t, const uint64_t* previous) noexcept {
  uint32_t best = 0;
  for (uint32_t k = 0; k < kPositionsPerSite; ++k) {
    if (previous[k] == 0) continue;
    const uint64_t p = t - (previous[k] - 1);
    // Multiples of the current period verify whenever it does: they are not a larger structure.
    if (p <= period_ || p > kMaxPeriod || p % period_ == 0 || (best != 0 && p >= best)) continue;
    if (verify(t, static_cast<uint32_t>(p)) && !verify_over(t, period_, p, true)) best = static_cast<uint32_t>(p);
  }
  if (best == 0) return false;
  // Steps counted under the smaller period were iterations of an inner loop: count again.
  complete_steps_ = 0;
  counted_until_ = 0;
  ++relocks_;
  lock_on(t, best);
  return true;
}

bool StepDetector::segment_complete(uint64_t from, uint64_t to) const noexcept {
  const uint64_t len = to - from;
  if (len * 2 < period_) return false;
  uint64_t matches = 0;
  for (uint64_t k = 0; k < len && k < period_; ++k)
    if (at(from + k).site == cycle_[k]) ++matches;
  return matches * 2 >= period_;
}

void StepDetector::lock_on(uint64_t t, uint32_t p) noexcept {
  const uint64_t first = t + 1 - p;  // the last p events form one full cycle
  // The step starts where the fewest object bytes are alive; among equals, right after the biggest drop.
  uint64_t start = first;
  for (uint64_t q = first; q <= t; ++q) {
    const Event& e = at(q);
    const Event& s = at(start);
    const int64_t drop_q = static_cast<int64_t>(at(q - 1).live_bytes) - static_cast<int64_t>(e.live_bytes);
    const int64_t drop_s =
        static_cast<int64_t>(at(start - 1).live_bytes) - static_cast<int64_t>(s.live_bytes);
    if (e.live_bytes < s.live_bytes || (e.live_bytes == s.live_bytes && drop_q > drop_s)) start = q;
  }
  auto cyclic = [&](uint64_t q) { return first + (q - first) % p; };
  auto occurrences = [&](uint64_t site) {
    uint32_t n = 0;
    for (uint64_t q = first; q <= t; ++q) n += at(q).site == site;
    return n;
  };
  anchor_site_ = at(start).site;
  anchor_per_step_ = occurrences(anchor_site_);
  // Prefer a call-site that occurs once per step, if one follows closely: it resynchronises by itself.
  for (uint64_t k = 0; k <= p / 4 && anchor_per_step_ > 1; ++k) {
    const uint64_t q = cyclic(start + k);
    if (occurrences(at(q).site) == 1) {
      start = q;
      anchor_site_ = at(q).site;
      anchor_per_step_ = 1;
    }
  }
  period_ = p;
  for (uint32_t k = 0; k < p; ++k) cycle_[k] = at(cyclic(start + k)).site;
  locked_ = true;

  // Count the complete steps still in the history, then resume the step in progress at `start`.
  const uint64_t oldest = t + 1 > kHistory ? t + 1 - kHistory : 0;
  const uint64_t lo = counted_until_ > oldest ? counted_until_ : oldest;
  uint64_t retro = 0;
  if (anchor_per_step_ == 1) {
    uint64_t prev = UINT64_MAX;
    for (uint64_t q = lo; q < start; ++q) {
      if (at(q).site != anchor_site_) continue;
      if (prev != UINT64_MAX && segment_complete(prev, q)) ++retro;
      prev = q;
    }
    if (prev != UINT64_MAX && segment_complete(prev, start)) ++retro;
  } else {
    for (uint64_t s = start; s >= lo + p && segment_complete(s - p, s); s -= p) ++retro;
  }
  complete_steps_ += retro;
  counted_until_ = start;
  step_index_ = static_cast<int64_t>(complete_steps_);
  event_in_step_ = static_cast<uint32_t>(t - start);
  step_events_ = static_cast<uint32_t>(t - start + 1);
  step_bytes_ = 0;
  step_matches_ = 0;
  anchor_seen_ = 0;
  for (uint64_t q = start; q <= t; ++q) {
    step_bytes_ += at(q).size;
    if (at(q).site == cycle_[q - start]) ++step_matches_;
    if (at(q).site == anchor_site_) ++anchor_seen_;
  }
  failed_steps_in_row_ = 0;
}

bool StepDetector::is_boundary(uint64_t site) noexcept {
  if (site != anchor_site_) return false;
  if (anchor_per_step_ == 1 || anchor_seen_ >= anchor_per_step_) return true;
  ++anchor_seen_;
  return false;
}

void StepDetector::begin_step(uint64_t site, uint64_t size) noexcept {
  ++step_index_;
  if (step_index_ < static_cast<int64_t>(complete_steps_)) step_index_ = static_cast<int64_t>(complete_steps_);
  event_in_step_ = 0;
  step_events_ = 1;
  step_bytes_ = size;
  step_matches_ = (period_ > 0 && cycle_[0] == site) ? 1 : 0;
  anchor_seen_ = 1;
  counted_until_ = total_events_ - 1;
}

void StepDetector::advance(uint64_t site, uint64_t size) noexcept {
  ++event_in_step_;
  ++step_events_;
  step_bytes_ += size;
  if (event_in_step_ < period_ && cycle_[event_in_step_] == site) ++step_matches_;
}

void StepDetector::close_step(bool at_exit) noexcept {
  if (step_index_ < 0 || step_events_ == 0) return;
  bool complete;
  if (explicit_) {
    complete = !at_exit || step_events_ * 2 >= last_step_objects_;
  } else {
    // A step far longer than the period is the program doing something else (a new model, a change
    // of batch shape), unless it is the last one, which may run on into evaluation or shutdown.
    const bool plausible_length = at_exit || uint64_t{step_events_} * 2 <= uint64_t{period_} * 3;
    complete = plausible_length && step_events_ * 2 >= period_ && step_matches_ * 2 >= period_;
  }
  if (complete) {
    ++complete_steps_;
    failed_steps_in_row_ = 0;
    last_step_objects_ = step_events_;
    last_step_bytes_ = step_bytes_;
    if (explicit_) period_ = step_events_;
  } else if (!explicit_ && ++failed_steps_in_row_ >= 2) {
    // The learned cycle no longer describes the program: search again.
    locked_ = false;
    step_index_ = -1;
    ++relocks_;
  }
  step_events_ = 0;
}

bool StepDetector::observe(uint64_t site, uint32_t live_objects, uint64_t live_bytes,
                           uint64_t size) noexcept {
  const uint64_t t = total_events_++;
  history_[t & (kHistory - 1)] = Event{site, live_bytes, size, live_objects};
  uint64_t previous[kPositionsPerSite];
  remember_site(site, t, previous);

  if (mark_pending_) {
    mark_pending_ = false;
    if (!explicit_) {
      // The first marker switches detection off: from here on the program defines the steps.
      explicit_ = true;
      locked_ = false;
      step_index_ = static_cast<int64_t>(complete_steps_) - 1;
      step_events_ = 0;
    } else {
      close_step(false);
    }
    begin_step(site, size);
    return true;
  }
  if (explicit_) {
    if (step_index_ >= 0) advance(site, size);
    return false;
  }
  if (!locked_) {
    try_lock(t, previous);
    return locked_ && event_in_step_ == 0;
  }
  if (try_switch(t, previous)) return event_in_step_ == 0;
  if (is_boundary(site)) {
    close_step(false);
    if (!locked_) {
      try_lock(t, previous);
      return locked_ && event_in_step_ == 0;
    }
    begin_step(site, size);
    return true;
  }
  advance(site, size);
  return false;
}

void StepDetector::mark_step() noexcept { mark_pending_ = true; }

void StepDetector::finish() noexcept {
  if (explicit_ || locked_) close_step(true);
  step_events_ = 0;
}

}  // namespace sentinel
