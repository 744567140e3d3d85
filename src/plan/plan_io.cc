#include "plan/plan_io.h"

#include "core/output_file.h"
#include "plan/tag_text.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace sentinel {
namespace {

using nlohmann::json;

constexpr uint32_t kMaxPeriod = 1u << 24;  // far above any real step; bounds allocations

std::string hex_tag(uint64_t tag) { return format_tag(tag); }

bool parse_tag(const json& j, uint64_t* tag) {
  return j.is_string() && parse_tag_text(j.get_ref<const std::string&>(), tag);
}

bool get_u64(const json& obj, const char* key, uint64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_unsigned()) return false;
  *out = it->get<uint64_t>();
  return true;
}

bool parse_impl(std::string_view text, Plan* out, std::string* error) {
  auto bad = [&](const std::string& msg) {
    if (error != nullptr) *error = "plan: " + msg;
    return false;
  };
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON");
  if (!j.is_object()) return bad("top level is not an object");
  auto fmt = j.find("format");
  if (fmt == j.end() || !fmt->is_string() || fmt->get_ref<const std::string&>() != kPlanFormatName)
    return bad("format: expected \"sentinel-plan\"");
  auto ver = j.find("version");
  if (ver == j.end() || !ver->is_number_integer()) return bad("version: missing or not an integer");
  if (ver->get<int64_t>() != kPlanFormatVersion)
    return bad("version: " + ver->dump() + " is not supported (this reader knows version 1)");
  Plan p;
  if (auto pol = j.find("policy"); pol != j.end()) {
    if (!pol->is_string()) return bad("policy: not a string");
    p.policy = pol->get<std::string>();
  }
  uint64_t period = 0;
  if (!get_u64(j, "period", &period) || period == 0 || period > kMaxPeriod)
    return bad("period: missing or not an integer in 1.." + std::to_string(kMaxPeriod));
  p.period = static_cast<uint32_t>(period);
  p.events.assign(p.period, {});

  auto objs = j.find("objects");
  if (objs == j.end() || !objs->is_array()) return bad("objects: missing or not an array");
  for (size_t i = 0; i < objs->size(); ++i) {
    const json& o = (*objs)[i];
    const std::string where = "objects[" + std::to_string(i) + "]";
    if (!o.is_object()) return bad(where + ": not an object");
    uint64_t tag = 0;
    auto t = o.find("tag");
    if (t == o.end() || !parse_tag(*t, &tag)) return bad(where + ".tag: expected a hex string 0x...");
    auto bt = o.find("birth_tier");
    if (bt == o.end() || !bt->is_string()) return bad(where + ".birth_tier: missing or not a string");
    const std::string& tier = bt->get_ref<const std::string&>();
    Tier value;
    if (tier == "fast") value = Tier::kFast;
    else if (tier == "slow") value = Tier::kSlow;
    else return bad(where + ".birth_tier: '" + tier + "' is not fast or slow");
    if (!p.birth_tier.emplace(tag, value).second) return bad(where + ".tag: duplicate tag");
  }

  auto evs = j.find("events");
  if (evs == j.end() || !evs->is_array()) return bad("events: missing or not an array");
  for (size_t i = 0; i < evs->size(); ++i) {
    const json& e = (*evs)[i];
    const std::string where = "events[" + std::to_string(i) + "]";
    if (!e.is_object()) return bad(where + ": not an object");
    uint64_t k = 0;
    if (!get_u64(e, "event", &k) || k >= p.period)
      return bad(where + ".event: missing or not an integer below period");
    auto moves = e.find("moves");
    if (moves == e.end() || !moves->is_array()) return bad(where + ".moves: missing or not an array");
    for (size_t m = 0; m < moves->size(); ++m) {
      const json& mv = (*moves)[m];
      const std::string mw = where + ".moves[" + std::to_string(m) + "]";
      if (!mv.is_object()) return bad(mw + ": not an object");
      Move move;
      auto op = mv.find("op");
      if (op == mv.end() || !op->is_string()) return bad(mw + ".op: missing or not a string");
      const std::string& ops = op->get_ref<const std::string&>();
      if (ops == "evict") move.kind = MoveKind::kEvict;
      else if (ops == "prefetch") move.kind = MoveKind::kPrefetch;
      else return bad(mw + ".op: '" + ops + "' is not evict or prefetch");
      auto t = mv.find("tag");
      if (t == mv.end() || !parse_tag(*t, &move.tag)) return bad(mw + ".tag: expected a hex string 0x...");
      if (p.birth_tier.find(move.tag) == p.birth_tier.end())
        return bad(mw + ".tag: " + hex_tag(move.tag) + " is not listed in objects");
      p.events[k].push_back(move);
    }
  }

  if (auto s = j.find("summary"); s != j.end()) {
    if (!s->is_object()) return bad("summary: not an object");
    PlanSummary& sum = p.summary;
    struct U64Field { const char* key; uint64_t* dst; };
    U64Field u64s[] = {{"budget_bytes", &sum.budget_bytes},
                       {"expected_dram_peak_bytes", &sum.expected_dram_peak_bytes},
                       {"migrated_bytes_per_step", &sum.migrated_bytes_per_step}};
    for (const auto& f : u64s) {
      if (s->contains(f.key) && !get_u64(*s, f.key, f.dst))
        return bad(std::string("summary.") + f.key + ": not a non-negative integer");
    }
    struct U32Field { const char* key; uint32_t* dst; };
    U32Field u32s[] = {{"prefetches", &sum.prefetches},
                       {"evictions", &sum.evictions},
                       {"late_prefetch_risk", &sum.late_prefetch_risk}};
    for (const auto& f : u32s) {
      uint64_t v = 0;
      if (s->contains(f.key) && (!get_u64(*s, f.key, &v) || v > UINT32_MAX))
        return bad(std::string("summary.") + f.key + ": not a 32-bit non-negative integer");
      *f.dst = static_cast<uint32_t>(v);
    }
    if (auto m = s->find("modeled_step_ns"); m != s->end()) {
      if (!m->is_number()) return bad("summary.modeled_step_ns: not a number");
      sum.modeled_step_ns = m->get<double>();
    }
    if (auto b = s->find("budget_insufficient"); b != s->end()) {
      if (!b->is_boolean()) return bad("summary.budget_insufficient: not a boolean");
      sum.budget_insufficient = b->get<bool>();
    }
    if (auto m = s->find("message"); m != s->end()) {
      if (!m->is_string()) return bad("summary.message: not a string");
      sum.message = m->get<std::string>();
    }
  }
  *out = std::move(p);
  return true;
}

}  // namespace

std::string serialize_plan(const Plan& plan) {
  // Objects sorted by tag and one line per event so that plan files diff well.
  std::vector<std::pair<uint64_t, Tier>> objs(plan.birth_tier.begin(), plan.birth_tier.end());
  std::sort(objs.begin(), objs.end());
  std::ostringstream out;
  out << "{\"format\": " << json(std::string(kPlanFormatName)).dump()
      << ", \"version\": " << kPlanFormatVersion << ",\n";
  out << " \"policy\": " << json(plan.policy).dump(-1, ' ', false, json::error_handler_t::replace)
      << ",\n \"period\": " << plan.period << ",\n";
  const PlanSummary& s = plan.summary;
  json sum = {{"budget_bytes", s.budget_bytes},
              {"expected_dram_peak_bytes", s.expected_dram_peak_bytes},
              {"migrated_bytes_per_step", s.migrated_bytes_per_step},
              {"prefetches", s.prefetches},
              {"evictions", s.evictions},
              {"late_prefetch_risk", s.late_prefetch_risk},
              {"modeled_step_ns", s.modeled_step_ns},
              {"budget_insufficient", s.budget_insufficient},
              {"message", s.message}};
  out << " \"summary\": " << sum.dump(-1, ' ', false, json::error_handler_t::replace) << ",\n";
  out << " \"objects\": [";
  for (size_t i = 0; i < objs.size(); ++i) {
    out << (i ? ",\n  " : "\n  ") << "{\"tag\": \"" << hex_tag(objs[i].first)
        << "\", \"birth_tier\": \"" << tier_name(objs[i].second) << "\"}";
  }
  out << "],\n \"events\": [";
  bool first = true;
  for (uint32_t k = 0; k < plan.events.size(); ++k) {
    if (plan.events[k].empty()) continue;
    out << (first ? "\n  " : ",\n  ") << "{\"event\": " << k << ", \"moves\": [";
    first = false;
    for (size_t m = 0; m < plan.events[k].size(); ++m) {
      const Move& mv = plan.events[k][m];
      out << (m ? ", " : "") << "{\"op\": \"" << move_kind_name(mv.kind) << "\", \"tag\": \""
          << hex_tag(mv.tag) << "\"}";
    }
    out << "]}";
  }
  out << "]}\n";
  return out.str();
}

bool parse_plan(std::string_view text, Plan* out, std::string* error) {
  try {
    return parse_impl(text, out, error);
  } catch (const std::exception& e) {  // out of memory or a library surprise: report, never throw
    if (error != nullptr) *error = std::string("plan: ") + e.what();
    return false;
  }
}

bool write_plan_file(const std::string& path, const Plan& plan, std::string* error) {
  std::string text;
  try {
    text = serialize_plan(plan);
  } catch (const std::exception& e) {
    if (error != nullptr) *error = "cannot serialize the plan for '" + path + "': " + e.what();
    return false;
  }
  const Status written = write_file_replacing(path, text);
  if (!written.is_ok() && error != nullptr) *error = written.message();
  return written.is_ok();
}

bool read_plan_file(const std::string& path, Plan* out, std::string* error) {
  std::ifstream f(path);
  if (!f) {
    if (error != nullptr) *error = "cannot open plan file '" + path + "'";
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_plan(ss.str(), out, error);
}

}  // namespace sentinel
