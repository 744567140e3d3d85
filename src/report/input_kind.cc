#include "report/input_kind.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/stats_keys.h"

namespace sentinel::report {

const char* input_kind_name(InputKind k) {
  switch (k) {
    case InputKind::kProfile: return "profile";
    case InputKind::kStats: return "stats";
    case InputKind::kTimeline: return "timeline";
  }
  return "?";
}

bool detect_input_kind(const std::string& path, InputKind* kind, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  std::string first;
  std::getline(in, first);
  // A timeline's first line is a complete JSON object, its header.
  const nlohmann::json head = nlohmann::json::parse(first, nullptr, false);
  if (!head.is_discarded() && head.is_object() && head.value("format", "") == "sentinel-timeline") {
    *kind = InputKind::kTimeline;
    return true;
  }
  std::stringstream rest;
  rest << first << "\n" << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(rest.str(), nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    if (j.value("format", "") == "sentinel-profile") {
      *kind = InputKind::kProfile;
      return true;
    }
    if (j.contains(stats_key::kMode) && j.contains(stats_key::kStepsDetected)) {
      *kind = InputKind::kStats;
      return true;
    }
  }
  *error = path + " is neither a profile, a stats file nor an executed timeline";
  return false;
}

}  // namespace sentinel::report
