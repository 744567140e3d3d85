// libFuzzer target for the timeline reader (src/plan/timeline.h): `sentinel replay --timeline` reads
// JSON lines written by a run that may have been cut short or tampered with. Properties checked
// besides "no crash, no sanitizer report, no exception escapes, no allocation beyond libFuzzer's
// limit":
//   - a rejection says why and names the line;
//   - an accepted timeline keeps every move's phase below its period;
//   - an accepted timeline holds at most 2^24 tags in its phase states (version 2's delta records are
//     expanded into whole states: the cap keeps that linear in the input).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "plan/timeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  sentinel::ExecutedTimeline timeline;
  std::string error;
  if (!sentinel::parse_timeline(in, &timeline, &error)) {
    if (error.rfind("timeline", 0) != 0) __builtin_trap();
    return 0;
  }
  if (timeline.period == 0) __builtin_trap();
  uint64_t phase_tags = 0;
  for (const sentinel::ExecutedStep& step : timeline.steps) {
    for (const sentinel::TimelineMove& move : step.issued) {
      if (move.phase >= timeline.period) __builtin_trap();
    }
    for (const auto& [phase, state] : step.phases) {
      if (phase >= timeline.period) __builtin_trap();
      phase_tags += state.fast.size() + state.slow.size() + state.moving.size();
    }
  }
  if (phase_tags > (uint64_t{1} << 24)) __builtin_trap();
  return 0;
}
