// Plan files: a versioned JSON document, specified in docs/plan-format.md:
//   {"format": "sentinel-plan", "version": 1, "policy": ..., "period": N,
//    "objects": [{"tag": "0x...", "birth_tier": "fast"|"slow"}, ...],
//    "events": [{"event": k, "moves": [{"op": "evict"|"prefetch", "tag": "0x..."}, ...]}, ...],
//    "summary": {...}}
// Tags are hex strings because 64-bit integers do not survive every JSON reader.
//
// The reader is a trust boundary: it checks every field and rejects malformed input with a message
// naming the field; it never throws or aborts on any input.
//
// Thread safety: reentrant; no shared state.
#pragma once

#include <string>
#include <string_view>

#include "plan/plan.h"

namespace sentinel {

inline constexpr std::string_view kPlanFormatName = "sentinel-plan";
inline constexpr int kPlanFormatVersion = 1;

std::string serialize_plan(const Plan& plan);
bool parse_plan(std::string_view text, Plan* out, std::string* error);
bool write_plan_file(const std::string& path, const Plan& plan, std::string* error);
bool read_plan_file(const std::string& path, Plan* out, std::string* error);

}  // namespace sentinel
