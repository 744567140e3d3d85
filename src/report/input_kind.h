// Which of Sentinel's files a path is, told by its contents: a profile ("format": "sentinel-profile"),
// an executed timeline (JSON lines starting with a "sentinel-timeline" header) or a stats file (a JSON
// object with "mode" and "steps_detected"). `sentinel report INPUT...` takes them in any order.
//
// Thread safety: reentrant.
#pragma once

#include <string>

namespace sentinel::report {

enum class InputKind { kProfile, kStats, kTimeline };

const char* input_kind_name(InputKind k);

// False with *error when the file cannot be read or is none of the three.
bool detect_input_kind(const std::string& path, InputKind* kind, std::string* error);

}  // namespace sentinel::report
