// libFuzzer target for the profile reader (src/profile/profile_io.h). Properties checked besides
// "no crash, no sanitizer report, no exception escapes":
//   - whatever parse_profile accepts satisfies validate_profile;
//   - serializing an accepted profile and parsing it again succeeds and renders identically.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "profile/profile_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  sentinel::StepProfile p;
  std::string error;
  if (!sentinel::parse_profile(text, &p, &error)) {
    if (error.empty()) __builtin_trap();  // a rejection must say why
    return 0;
  }
  if (!sentinel::validate_profile(p, &error)) __builtin_trap();
  const std::string once = sentinel::serialize_profile(p);
  sentinel::StepProfile q;
  if (!sentinel::parse_profile(once, &q, &error)) __builtin_trap();
  if (sentinel::serialize_profile(q) != once) __builtin_trap();
  return 0;
}
