// Allocation-event traces recorded with SENTINEL_TRACE (tests/core/data/*.trace), read whole for the step
// detection tests: one event per line, "site(hex) live_objects live_bytes size [small_before]".
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sentinel::testing {

struct TraceEvent {
  uint64_t site;
  uint32_t objects;
  uint64_t bytes;
  uint64_t size;
  uint32_t small_before;  // 0 in traces recorded before the column existed
  bool mark_before = false;
};

// The events of tests/core/data/<file>; empty when it cannot be read.
inline std::vector<TraceEvent> load_trace(const std::string& file) {
  std::ifstream in(std::string(SENTINEL_TEST_DATA) + "/" + file);
  std::vector<TraceEvent> events;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    TraceEvent e{};
    fields >> std::hex >> e.site >> std::dec >> e.objects >> e.bytes >> e.size;
    if (!(fields >> e.small_before)) e.small_before = 0;
    events.push_back(e);
  }
  return events;
}

}  // namespace sentinel::testing
