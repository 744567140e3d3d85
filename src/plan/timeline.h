// The executed timeline of managed mode (SENTINEL_TIMELINE; docs/timeline-format.md, versions 1 and 2; a
// version-2 delta phase record is read back into the whole state it describes), read back so that what ran
// can be put through the cost model next to what was planned (`sentinel replay --timeline`).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "plan/plan.h"
#include "plan/profile_index.h"

namespace sentinel {

struct TimelineMove {
  uint32_t phase = 0;
  uint64_t tag = 0;
  Tier to = Tier::kSlow;
};

// One managed step as it ran.
struct ExecutedStep {
  int64_t step = 0;
  // The phases that have a record (keyed by phase, below the period): the objects on each tier when the
  // phase began, by completed moves, and those with a move in flight. Sparse, so that a hostile
  // timeline with a huge period costs memory by its records, not by its period.
  struct PhaseState {
    std::vector<uint64_t> fast, slow, moving;
  };
  std::map<uint32_t, PhaseState> phases;
  std::vector<TimelineMove> issued;  // in issue order
  uint32_t moves_done = 0, moves_failed = 0;
  bool deviated = false;
};

struct ExecutedTimeline {
  uint32_t period = 0;
  std::string policy;
  uint64_t budget_bytes = 0;
  std::vector<ExecutedStep> steps;
};

// Reads JSON lines; false with *error naming the line for anything malformed. Never throws.
bool parse_timeline(std::istream& in, ExecutedTimeline* out, std::string* error);
bool read_timeline_file(const std::string& path, ExecutedTimeline* out, std::string* error);

// The step as a Plan the cost model replays: every object born on the tier it was on at its birth (an
// object in flight then counts as on the tier it was leaving), every move at the phase it was issued.
// Tags the profile does not know are left out. False when the timeline's period is not the profile's.
bool executed_plan(const ExecutedTimeline& t, const ExecutedStep& step, const ProfileIndex& index, Plan* out,
                   std::string* error);

}  // namespace sentinel
