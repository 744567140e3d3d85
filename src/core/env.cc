#include "core/env.h"

#include <sys/auxv.h>

namespace sentinel {

bool secure_execution() noexcept { return getauxval(AT_SECURE) != 0; }

const char* env_get(const char* name) noexcept {
  if (environ == nullptr || name == nullptr || secure_execution()) return nullptr;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* s = *e;
    const char* n = name;
    while (*n != '\0' && *s == *n) {
      ++s;
      ++n;
    }
    if (*n == '\0' && *s == '=') return s + 1;
  }
  return nullptr;
}

bool str_equal(const char* a, const char* b) noexcept {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

static bool parse_digits(const char*& p, uint64_t* out) noexcept {
  if (*p < '0' || *p > '9') return false;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    const uint64_t d = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    ++p;
  }
  *out = v;
  return true;
}

bool parse_uint(const char* text, uint64_t* out) noexcept {
  if (text == nullptr) return false;
  const char* p = text;
  uint64_t v;
  if (!parse_digits(p, &v) || *p != '\0') return false;
  *out = v;
  return true;
}

bool parse_bytes(const char* text, uint64_t* out) noexcept {
  if (text == nullptr) return false;
  const char* p = text;
  uint64_t v;
  if (!parse_digits(p, &v)) return false;
  unsigned shift = 0;
  switch (*p) {
    case '\0': break;
    case 'k': case 'K': shift = 10; ++p; break;
    case 'm': case 'M': shift = 20; ++p; break;
    case 'g': case 'G': shift = 30; ++p; break;
    case 't': case 'T': shift = 40; ++p; break;
    default: return false;
  }
  if (shift != 0) {
    if (*p == 'i' && p[1] == 'B') p += 2;
    else if (*p == 'B') ++p;
  } else if (*p == 'B') {
    ++p;
  }
  if (*p != '\0') return false;
  if (shift != 0 && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

bool parse_bytes_or_percent(const char* text, uint64_t* bytes, double* percent) noexcept {
  if (text == nullptr || *text == '\0') return false;
  const char* end = text;
  while (*end != '\0') ++end;
  if (end[-1] != '%') {
    if (!parse_bytes(text, bytes)) return false;
    *percent = 0.0;
    return true;
  }
  // Percentage: digits with an optional fraction, then '%'.
  const char* p = text;
  uint64_t whole;
  if (!parse_digits(p, &whole) || whole > 100) return false;
  double value = static_cast<double>(whole);
  if (*p == '.') {
    ++p;
    double scale = 0.1;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') {
      value += (*p - '0') * scale;
      scale /= 10;
      ++p;
    }
  }
  if (p != end - 1 || value <= 0.0 || value > 100.0) return false;
  *percent = value;
  *bytes = 0;
  return true;
}

}  // namespace sentinel
