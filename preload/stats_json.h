// The SENTINEL_STATS report: one JSON object written at exit by the process that loaded Sentinel.
#pragma once

#include <string>

namespace sentinel::rt {

// Writes the report to `path` (replacing it whole, core/output_file.h). Returns false with *error set
// when the file cannot be written.
bool write_stats_json(const char* path, std::string* error) noexcept;

// Writes the allocation events still in the step detector's history (the last StepDetector::kHistory,
// 32,768), one per line: "site live_objects live_bytes size small_before" (site in hex). Recorded traces
// are test input for step detection.
bool write_event_trace(const char* path, std::string* error) noexcept;

}  // namespace sentinel::rt
