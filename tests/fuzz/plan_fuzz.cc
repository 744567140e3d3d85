// libFuzzer target for the plan reader (src/plan/plan_io.h), a trust boundary: SENTINEL_PLAN and
// `sentinel replay --plan` read files someone else may have written. Properties checked besides
// "no crash, no sanitizer report, no exception escapes":
//   - a rejection says why;
//   - an accepted plan serializes, parses again and serializes identically.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plan/plan_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  sentinel::Plan plan;
  std::string error;
  if (!sentinel::parse_plan(text, &plan, &error)) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  const std::string once = sentinel::serialize_plan(plan);
  sentinel::Plan again;
  if (!sentinel::parse_plan(once, &again, &error)) __builtin_trap();
  if (sentinel::serialize_plan(again) != once) __builtin_trap();
  return 0;
}
