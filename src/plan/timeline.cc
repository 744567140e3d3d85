#include "plan/timeline.h"

#include "plan/tag_text.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

namespace sentinel {
namespace {

bool parse_tag(const nlohmann::json& v, uint64_t* out) {
  return v.is_string() && parse_tag_text(v.get_ref<const std::string&>(), out);
}

bool parse_tags(const nlohmann::json& v, std::vector<uint64_t>* out) {
  if (!v.is_array()) return false;
  for (const auto& x : v) {
    uint64_t t;
    if (!parse_tag(x, &t)) return false;
    out->push_back(t);
  }
  return true;
}

// Tags kept in phase records over the whole timeline, at most: a delta record of a few bytes copies its
// step's previous state, so without a cap a short hostile file could cost memory quadratic in its length.
// A real recording stays far below (an 80-object step of 81 phases: about 6,600 per step).
constexpr uint64_t kMaxPhaseTags = uint64_t{1} << 24;

// What parsing has seen so far besides the timeline itself.
struct ParseState {
  bool header = false;
  uint32_t version = 0;
  const ExecutedStep::PhaseState* previous = nullptr;  // the current step's latest phase record
  uint64_t phase_tags = 0;
};

// Removes one occurrence of every tag in `v` from `list`; false when one is not there.
bool remove_each(const nlohmann::json& v, std::vector<uint64_t>* list) {
  std::vector<uint64_t> tags;
  if (!parse_tags(v, &tags)) return false;
  for (uint64_t t : tags) {
    auto it = std::find(list->begin(), list->end(), t);
    if (it == list->end()) return false;
    *it = list->back();
    list->pop_back();
  }
  return true;
}

// A version-2 delta record: the step's previous phase state, less the objects that left each list, plus
// those that joined it.
bool apply_delta(const nlohmann::json& j, const ExecutedStep::PhaseState& previous, ExecutedStep::PhaseState* p,
                 const std::function<bool(const std::string&)>& bad) {
  *p = previous;
  if (!remove_each(j.value("left_fast", nlohmann::json::array()), &p->fast) ||
      !remove_each(j.value("left_slow", nlohmann::json::array()), &p->slow) ||
      !remove_each(j.value("left_moving", nlohmann::json::array()), &p->moving)) {
    return bad("left_fast, left_slow and left_moving must be arrays of \"0x...\" tags the previous phase lists");
  }
  if (!parse_tags(j.value("fast", nlohmann::json::array()), &p->fast) ||
      !parse_tags(j.value("slow", nlohmann::json::array()), &p->slow) ||
      !parse_tags(j.value("moving", nlohmann::json::array()), &p->moving)) {
    return bad("fast, slow and moving must be arrays of \"0x...\" tags");
  }
  return true;
}

// One record; throws (nlohmann type errors, bad_alloc) on what it does not check itself.
bool parse_record(const std::string& line, ExecutedTimeline* out, ParseState* ps,
                  const std::function<bool(const std::string&)>& bad) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return bad("not a JSON object with a \"type\"");
  }
  const std::string type = j["type"];
  if (type == "header") {
    // Types checked before any conversion: a float converted to an integer out of range is undefined.
    const auto format = j.find("format"), version = j.find("version");
    if (format == j.end() || !format->is_string() || *format != "sentinel-timeline" || version == j.end() ||
        !version->is_number_unsigned() || version->get<uint64_t>() < 1 || version->get<uint64_t>() > 2) {
      return bad("not a sentinel-timeline of version 1 or 2");
    }
    ps->version = version->get<uint32_t>();
    if (j.contains("policy") && !j["policy"].is_string()) return bad("\"policy\" must be a string");
    if (j.contains("budget_bytes") && !j["budget_bytes"].is_number_unsigned()) {
      return bad("\"budget_bytes\" must be a non-negative integer");
    }
    if (!j.contains("period") || !j["period"].is_number_unsigned() || j["period"].get<uint64_t>() == 0 ||
        j["period"].get<uint64_t>() > (1u << 24)) {
      return bad("period must be an integer from 1 to 2^24");
    }
    out->period = j["period"].get<uint32_t>();
    out->policy = j.value("policy", "");
    out->budget_bytes = j.value("budget_bytes", uint64_t{0});
    ps->header = true;
    return true;
  }
  if (!ps->header) return bad("the header must come first");
  if (!j.contains("step") || !j["step"].is_number_integer()) return bad("\"step\" must be an integer");
  const int64_t step = j["step"];
  if (type == "step") {
    ExecutedStep s;
    s.step = step;
    out->steps.push_back(std::move(s));
    ps->previous = nullptr;
    return true;
  }
  if (out->steps.empty() || out->steps.back().step != step) return bad("a record of a step that was not begun");
  ExecutedStep& s = out->steps.back();
  if (type == "deviation") {
    s.deviated = true;
    return true;
  }
  if (!j.contains("phase") || !j["phase"].is_number_unsigned() || j["phase"].get<uint64_t>() >= out->period) {
    return bad("\"phase\" must be an integer below the period");
  }
  const uint32_t phase = j["phase"];
  if (type == "phase") {
    const auto delta = j.find("delta");
    if (delta != j.end() && !delta->is_boolean()) return bad("\"delta\" must be true or false");
    ExecutedStep::PhaseState p;
    if (delta != j.end() && delta->get<bool>()) {
      if (ps->version < 2) return bad("a delta phase record in a timeline of version 1");
      if (ps->previous == nullptr) return bad("a delta phase record with no phase record before it in its step");
      if (!apply_delta(j, *ps->previous, &p, bad)) return false;
    } else if (!parse_tags(j.value("fast", nlohmann::json::array()), &p.fast) ||
               !parse_tags(j.value("slow", nlohmann::json::array()), &p.slow) ||
               !parse_tags(j.value("moving", nlohmann::json::array()), &p.moving)) {
      return bad("fast, slow and moving must be arrays of \"0x...\" tags");
    }
    ps->phase_tags += p.fast.size() + p.slow.size() + p.moving.size();
    if (ps->phase_tags > kMaxPhaseTags) {
      return bad("more than " + std::to_string(kMaxPhaseTags) + " tags in the phase records");
    }
    ExecutedStep::PhaseState& kept = s.phases[phase];
    kept = std::move(p);
    ps->previous = &kept;
  } else if (type == "move") {
    TimelineMove m;
    m.phase = phase;
    if (!j.contains("tag") || !parse_tag(j["tag"], &m.tag)) return bad("\"tag\" must be a \"0x...\" tag");
    const std::string to = j.value("to", "");
    const std::string what = j.value("what", "");
    if (to != "fast" && to != "slow") return bad("\"to\" must be \"fast\" or \"slow\"");
    m.to = to == "fast" ? Tier::kFast : Tier::kSlow;
    if (what == "issued") {
      s.issued.push_back(m);
    } else if (what == "done") {
      ++s.moves_done;
    } else if (what == "failed") {
      ++s.moves_failed;
    } else {
      return bad("\"what\" must be issued, done or failed");
    }
  } else {
    return bad("unknown type \"" + type + "\"");
  }
  return true;
}

}  // namespace

bool parse_timeline(std::istream& in, ExecutedTimeline* out, std::string* error) {
  *out = ExecutedTimeline{};
  std::string line;
  size_t n = 0;
  ParseState state;
  auto bad = [&](const std::string& why) {
    *error = "timeline line " + std::to_string(n) + ": " + why;
    return false;
  };
  try {
    while (std::getline(in, line)) {
      ++n;
      if (line.empty()) continue;
      if (!parse_record(line, out, &state, bad)) return false;
    }
  } catch (const std::exception& e) {  // a field of the wrong type, or out of memory
    return bad(std::string("malformed record (") + e.what() + ")");
  }
  if (!state.header) {
    *error = "timeline: no header (an empty file?)";
    return false;
  }
  return true;
}

bool read_timeline_file(const std::string& path, ExecutedTimeline* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  return parse_timeline(in, out, error);
}

bool executed_plan(const ExecutedTimeline& t, const ExecutedStep& step, const ProfileIndex& index, Plan* out,
                   std::string* error) {
  if (t.period != index.period()) {
    *error = "the timeline's period (" + std::to_string(t.period) + ") is not the profile's (" +
             std::to_string(index.period()) + ")";
    return false;
  }
  Plan p;
  p.policy = "executed";
  p.period = t.period;
  p.events.assign(t.period, {});
  auto contains = [](const std::vector<uint64_t>& v, uint64_t tag) {
    for (uint64_t x : v)
      if (x == tag) return true;
    return false;
  };
  for (const ObjectView& o : index.objects()) {
    const uint32_t birth = o.cyclic ? 0 : o.birth;
    static const ExecutedStep::PhaseState kNoRecord;
    const auto at = step.phases.find(birth);
    const ExecutedStep::PhaseState& ph = at != step.phases.end() ? at->second : kNoRecord;
    Tier tier = Tier::kSlow;
    if (contains(ph.fast, o.tag)) {
      tier = Tier::kFast;
    } else if (contains(ph.moving, o.tag)) {
      // In flight when its phase began: it was leaving the tier opposite to its first move of the step.
      for (const TimelineMove& m : step.issued) {
        if (m.tag == o.tag) {
          tier = m.to == Tier::kFast ? Tier::kSlow : Tier::kFast;
          break;
        }
      }
    }
    p.birth_tier[o.tag] = tier;
  }
  for (const TimelineMove& m : step.issued) {
    if (index.find(m.tag) < 0) continue;
    p.events[m.phase].push_back(Move{m.tag, m.to == Tier::kFast ? MoveKind::kPrefetch : MoveKind::kEvict});
  }
  p.summary.budget_bytes = t.budget_bytes;
  *out = std::move(p);
  return true;
}

}  // namespace sentinel
