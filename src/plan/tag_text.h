// Tags as text: "0x" + 16 hex digits, the form every Sentinel file uses (plan files, timelines, logs),
// because 64-bit tags do not survive every JSON reader as numbers.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sentinel {

std::string format_tag(uint64_t tag);
// "0x" or "0X" and 1 to 16 hex digits; false for anything else.
bool parse_tag_text(std::string_view text, uint64_t* tag);

}  // namespace sentinel
