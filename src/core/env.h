// Environment access and value parsing that never allocate, so they can run in the runtime's initialise(),
// from libsentinel's constructor (preload/override.cc), before Sentinel's allocator is set up, where an
// allocation would re-enter it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sentinel {

// True when the kernel started this process in secure-execution mode (AT_SECURE: setuid or setgid,
// file capabilities, an LSM transition). Then Sentinel reads no environment at all, as secure_getenv(3)
// does: whoever starts a privileged program must not choose the files Sentinel writes inside it or how
// it manages its memory. Does not allocate.
bool secure_execution() noexcept;

// Returns the value of `name` from `environ`, or nullptr (always nullptr under secure execution).
// Does not allocate.
const char* env_get(const char* name) noexcept;

// Calls fn(name_with_value) for every environ entry that starts with `prefix` (none under secure
// execution). Does not allocate.
template <typename Fn>
void env_for_each_with_prefix(const char* prefix, Fn fn) noexcept;

// Parses a byte count: decimal digits with an optional K, M, G or T suffix (binary units, also KiB/KB
// spellings), e.g. "65536", "64K", "2MiB". Rejects empty strings, signs, overflow and trailing junk.
bool parse_bytes(const char* text, uint64_t* out) noexcept;

// Parses a non-negative decimal integer without suffix. Rejects overflow and junk.
bool parse_uint(const char* text, uint64_t* out) noexcept;

// Parses a byte count or a percentage ("20%", "12.5%"): sets either *bytes or *percent (0 < p <= 100).
bool parse_bytes_or_percent(const char* text, uint64_t* bytes, double* percent) noexcept;

bool str_equal(const char* a, const char* b) noexcept;

}  // namespace sentinel

extern "C" char** environ;

namespace sentinel {
template <typename Fn>
void env_for_each_with_prefix(const char* prefix, Fn fn) noexcept {
  if (environ == nullptr || secure_execution()) return;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* s = *e;
    const char* p = prefix;
    while (*p != '\0' && *s == *p) {
      ++s;
      ++p;
    }
    if (*p == '\0') fn(*e);
  }
}
}  // namespace sentinel
