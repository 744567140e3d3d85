// Internal to the planner: an object's candidate "windows" (stretches of its lifetime worth serving
// from fast memory) with their occupancy, migrations and value. See docs/planner.md.
//
// Offsets are on the object's clock: phases since birth for ordinary objects, unrolled absolute
// phases for persistent ones (they may be negative or >= period and are taken modulo the period).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/planner.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel::plan_detail {

// Windows of one object may be alternatives to each other (a group window, its shorter "prefix"
// windows and the merged runs of several groups, see planner_windows.cc): two windows of one object
// whose use ranges [first_use, last_use] overlap are never both selected.
struct Window {
  uint32_t obj = 0;
  int64_t first_use = 0, last_use = 0;  // offsets of the first and last access served
  int64_t start = 0;       // occupancy start: the prefetch offset, or 0 when born fast
  int64_t lo = 0;          // earliest offset a prefetch may move to
  int64_t occ_end = 0;     // exclusive end of occupancy, including the eviction copy
  bool born_fast = false;  // starts at birth (no prefetch)
  bool always = false;     // persistent object fast all the time (no migration)
  bool evict = false;      // evicted at last_use + 1
  bool short_lived = false;
  bool selected = false;
  double access_value = 0; // ns saved by serving the accesses from fast memory
  double benefit = 0;      // access_value - migration cost
  double density = 0;      // benefit per byte-phase of occupancy
};

// Absolute phase of an offset on the object's clock.
uint32_t abs_phase(const ProfileIndex& index, const ObjectView& o, int64_t offset);
// Time from offset a to offset b (b >= a) on the object's clock.
uint64_t span_ns(const ProfileIndex& index, const ObjectView& o, int64_t a, int64_t b);

// All candidate windows of all objects, with occupancy and value computed.
std::vector<Window> build_windows(const ProfileIndex& index, const MemorySystem& mem,
                                  const PlannerConfig& cfg);

// Latest offset p in [lo, target) with span_ns(p, target) >= need_ns, then `extra` phases earlier,
// never below lo. *tight is set when even lo leaves less than need_ns.
int64_t prefetch_offset(const ProfileIndex& index, const ObjectView& o, int64_t target, int64_t lo,
                        double need_ns, uint32_t extra, bool* tight);

}  // namespace sentinel::plan_detail
