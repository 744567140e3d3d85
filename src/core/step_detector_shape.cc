// The same-shape search of StepDetector (step_detector.h, rule 2.): two segments bounded by three
// occurrences of one call-site at low points of memory, with the same distinct call-sites. Split from
// step_detector.cc by job; the rules and costs are stated in the header.
//
// Thread safety: none (a StepDetector's caller serialises). Never allocates; no system calls.
#include "core/hash.h"
#include "core/step_detector.h"

namespace sentinel {

void StepDetector::propose_shape(uint64_t t, const uint64_t* previous) noexcept {
  if (shape_.active) return;
  const uint64_t site = at(t).site;
  if (clock_.locked_ && site == clock_.anchor_site_) return;  // the locked structure already begins here
  // A tensor close to the object threshold (the smallest size seen) may be too small to be an object in
  // the next step, when shapes vary: such a call-site would miss steps as an anchor.
  if (at(t).size < 2 * smallest_size_) return;
  // Segments of one occurrence of the site each or, for a site that recurs within fewer events than a
  // step has (once per layer of two, say), of two occurrences.
  for (uint32_t m = 1; m <= kPositionsPerSite / 2; ++m) {
    if (previous[2 * m - 1] == 0) return;
    const uint64_t b = previous[m - 1] - 1, a = previous[2 * m - 1] - 1;
    if (t - b < kMinWindow || b - a < kMinWindow) continue;
    if (m > 1 && t - (previous[0] - 1) >= kMinWindow) return;
    if (t - b > kMaxPeriod || b - a > kMaxPeriod || t - a > kHistory / 2) return;
    // Both earlier occurrences are low points too (see kLowSlack).
    const uint32_t objects = at(t).live_objects;
    if (at(b).live_objects > objects + kLowSlack || at(a).live_objects > objects + kLowSlack) return;
    shape_ = ShapeJob{true, a, b, t, a, ++shape_serial_, 0, 0, 0, 0, m};
    return;
  }
}

StepDetector::ShapeSite* StepDetector::find_shape_site(uint64_t site) noexcept {
  uint32_t at = static_cast<uint32_t>(mix64(site)) & (kCycleSlots - 1);
  for (uint32_t probe = 0; probe < 64; ++probe, at = (at + 1) & (kCycleSlots - 1)) {
    ShapeSite& c = shape_sites_[at];
    if (c.site == site) return &c;
    if (c.in_a != shape_.serial && c.in_b != shape_.serial) {  // free for this job
      c = ShapeSite{site, 0, 0};
      return &c;
    }
  }
  return nullptr;  // crowded: the site counts as absent
}

void StepDetector::run_shape_job(uint64_t t) noexcept {
  ShapeJob& j = shape_;
  if (!j.active) return;
  const uint32_t low = at(j.c).live_objects;
  for (uint32_t n = 0; n < kShapeBudget && j.cursor < j.c; ++n, ++j.cursor) {
    const Event& e = at(j.cursor);
    if (e.live_objects + kLowSlack < low) {  // the candidate is not at a low point of memory
      j.active = false;
      return;
    }
    // The distinct call-sites of each segment (a loop adds nothing after its first iteration, so a
    // longer or shorter loop gives the same set), counting only allocations well above the object
    // threshold (see build_cycle); those of the second segment also found in the first.
    if (e.size < 2 * smallest_size_) continue;
    ShapeSite* s = find_shape_site(e.site);
    if (s == nullptr) continue;
    if (j.cursor < j.b) {
      if (s->in_a != j.serial) {
        s->in_a = j.serial;
        ++j.distinct_a;
      }
    } else if (s->in_b != j.serial) {
      s->in_b = j.serial;
      ++j.distinct_b;
      if (s->in_a == j.serial) ++j.common;
      if (clock_.locked_ && clock_.find_cycle_site(e.site)->per_step == 0) ++j.foreign;
    }
  }
  if (j.cursor < j.c) return;
  j.active = false;
  // The same call-sites, but for a few whose tensors are objects in one step and too small in another.
  const uint32_t most = j.distinct_a > j.distinct_b ? j.distinct_a : j.distinct_b;
  if (j.distinct_b < 4 || j.common * 10 < most * 9) return;
  const uint64_t site = at(j.c).site;
  for (uint64_t q = j.c + 1; q <= t; ++q) {
    if (at(q).site == site) return;  // a newer occurrence proposes itself
  }
  const uint32_t p = static_cast<uint32_t>(j.c - j.b);
  // foreign counts distinct call-sites here.
  const bool switching = clock_.locked_ && j.foreign * 10 > j.distinct_b && replaces_locked(t, p);
  if (clock_.locked_ && !switching) return;
  if (switching) ++clock_.relocks_;
  if (j.per_step > 1) {
    build_cycle(j.b, p);  // for lock_on_part's coverage
    if (lock_on_part(t, j.c, p)) return;
  }
  lock(t, j.c, j.b, p, site, j.per_step);
}

}  // namespace sentinel
