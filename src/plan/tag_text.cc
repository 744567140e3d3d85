#include "plan/tag_text.h"

#include <cinttypes>
#include <cstdio>

namespace sentinel {

std::string format_tag(uint64_t tag) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, tag);
  return buf;
}

bool parse_tag_text(std::string_view s, uint64_t* tag) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  uint64_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    const char c = s[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *tag = v;
  return true;
}

}  // namespace sentinel
