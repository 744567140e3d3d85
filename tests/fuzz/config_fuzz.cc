// libFuzzer target for the configuration parser (src/core/config.h): every SENTINEL_* variable set to
// hostile bytes. The input is split at 0xff bytes into one segment per variable (in registry order); a
// segment whose first byte is odd sets the variable to the rest of the segment (NUL ends it, as in an
// environment), an even or missing one leaves it unset. Properties checked besides "no crash, no
// sanitizer report":
//   - a rejection is exactly one line that names a variable that was set and says Sentinel runs as a
//     pass-through allocator, and that variable alone is rejected too (the message names the culprit);
//   - an acceptance of everything means every variable is accepted alone.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/config.h"

namespace {

struct Assignment {
  std::vector<std::string> values;  // per registry variable
  std::vector<bool> set;
  int only = -1;  // when >= 0, only this variable is visible
};

const char* lookup(const char* name, void* ctx) {
  const auto* a = static_cast<const Assignment*>(ctx);
  for (size_t i = 0; i < a->values.size(); ++i) {
    if (!a->set[i] || (a->only >= 0 && static_cast<size_t>(a->only) != i)) continue;
    if (std::strcmp(sentinel::config_variable(i).name, name) == 0) return a->values[i].c_str();
  }
  return nullptr;
}

bool parse(const Assignment& a, std::string* message) {
  sentinel::Config config;
  const sentinel::Status s = sentinel::parse_config(lookup, const_cast<Assignment*>(&a), &config);
  *message = s.message();
  return s.is_ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t count = sentinel::config_variable_count();
  Assignment a;
  a.values.resize(count);
  a.set.assign(count, false);
  size_t at = 0;
  for (size_t i = 0; i < count && at < size; ++i) {
    size_t end = at;
    while (end < size && data[end] != 0xff) ++end;
    if (end > at && (data[at] & 1) != 0) {
      a.set[i] = true;
      std::string value(reinterpret_cast<const char*>(data + at + 1), end - at - 1);
      a.values[i] = value.substr(0, value.find('\0'));
    }
    at = end + 1;
  }
  std::string message;
  if (parse(a, &message)) {
    for (size_t i = 0; i < count; ++i) {
      if (!a.set[i]) continue;
      Assignment alone = a;
      alone.only = static_cast<int>(i);
      if (!parse(alone, &message)) __builtin_trap();
    }
    return 0;
  }
  if (message.empty() || message.find('\n') != std::string::npos) __builtin_trap();
  if (message.find("pass-through") == std::string::npos) __builtin_trap();
  for (const char c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) __builtin_trap();
  }
  for (size_t i = 0; i < count; ++i) {
    // The culprit is named at the start: the quoted value that follows is the input's own text and
    // may itself look like "invalid SENTINEL_X='" (found by this fuzzer in CI).
    const std::string named = std::string("sentinel: invalid ") + sentinel::config_variable(i).name + "='";
    if (!a.set[i] || message.compare(0, named.size(), named) != 0) continue;
    Assignment alone = a;
    alone.only = static_cast<int>(i);
    std::string again;
    if (parse(alone, &again)) __builtin_trap();  // the named variable is the one at fault
    return 0;
  }
  __builtin_trap();  // the message names no variable that was set
}
