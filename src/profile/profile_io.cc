// Profile file format, versions 1 and 2 (docs/profile-format.md). The parser first builds a JSON tree with
// nlohmann_json (whose parser is iterative, so deep nesting cannot overflow the stack), rejecting
// duplicate keys and nesting deeper than the format ever needs, then walks the tree field by field
// with explicit type and range checks, and finally checks the profile invariants (validate_profile).
#include "profile/profile_io.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/output_file.h"

namespace sentinel {
namespace {

using nlohmann::json;

// root object -> "objects" array -> object -> "accesses" array -> [phase, reads, writes].
constexpr int kMaxDepth = 5;

bool set_error(std::string* error, std::string msg) {
  if (error != nullptr) *error = std::move(msg);
  return false;
}

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

// Walks one JSON object, checking that it has only known keys and reading typed fields out of it.
class Fields {
 public:
  Fields(const json& obj, std::string path, std::string* error)
      : obj_(obj), path_(std::move(path)), error_(error) {}

  // Fails if the value is not an object or has a key outside `allowed`.
  bool check_keys(std::initializer_list<const char*> allowed) {
    if (!obj_.is_object()) return fail(path_.empty() ? "document" : path_, "is not a JSON object");
    for (const auto& item : obj_.items()) {
      bool known = false;
      for (const char* k : allowed) known = known || item.key() == k;
      if (!known) return fail(name(item.key()), "unknown field");
    }
    return true;
  }

  // Each getter returns false (with the error set) if the key is present but invalid, or absent and
  // `required`. An absent optional key leaves *out unchanged (the profile.h default).
  bool u64(const char* key, bool required, uint64_t* out) {
    const json* v = find(key, required);
    if (v == nullptr) return ok_;
    if (!v->is_number_unsigned()) return fail(name(key), "must be a non-negative integer");
    *out = v->get<uint64_t>();
    return true;
  }
  bool u32(const char* key, bool required, uint32_t* out) {
    uint64_t v = *out;
    if (!u64(key, required, &v)) return false;
    if (v > std::numeric_limits<uint32_t>::max()) {
      return fail(name(key), std::to_string(v) + " does not fit in 32 bits");
    }
    *out = static_cast<uint32_t>(v);
    return true;
  }
  bool str(const char* key, bool required, std::string* out) {
    const json* v = find(key, required);
    if (v == nullptr) return ok_;
    if (!v->is_string()) return fail(name(key), "must be a string");
    *out = v->get<std::string>();
    return true;
  }
  bool boolean(const char* key, bool required, bool* out) {
    const json* v = find(key, required);
    if (v == nullptr) return ok_;
    if (!v->is_boolean()) return fail(name(key), "must be true or false");
    *out = v->get<bool>();
    return true;
  }
  // A 64-bit hash written as "0x" followed by 1 to 16 hexadecimal digits.
  bool hash(const char* key, bool required, uint64_t* out) {
    const json* v = find(key, required);
    if (v == nullptr) return ok_;
    const std::string* s = v->get_ptr<const std::string*>();
    bool good = s != nullptr && s->size() > 2 && s->size() <= 18 && (*s)[0] == '0' &&
                ((*s)[1] == 'x' || (*s)[1] == 'X');
    uint64_t value = 0;
    for (size_t i = 2; good && i < s->size(); ++i) {
      const char c = (*s)[i];
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      good = d >= 0;
      value = (value << 4) | static_cast<uint64_t>(d < 0 ? 0 : d);
    }
    if (!good) return fail(name(key), "must be a string \"0x\" followed by 1 to 16 hex digits");
    *out = value;
    return true;
  }
  const json* array(const char* key, bool required) {
    const json* v = find(key, required);
    if (v != nullptr && !v->is_array()) {
      fail(name(key), "must be an array");
      return nullptr;
    }
    return v;
  }
  bool ok() const { return ok_; }
  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  const json* find(const char* key, bool required) {
    auto it = obj_.find(key);
    if (it != obj_.end()) return &*it;
    if (required) fail(name(key), "missing");
    return nullptr;
  }
  bool fail(const std::string& where, const std::string& what) {
    ok_ = false;
    return set_error(error_, where + ": " + what);
  }

  const json& obj_;
  std::string path_;
  std::string* error_;
  bool ok_ = true;
};

bool read_access(const json& v, const std::string& path, int version, PhaseAccess* out, std::string* error) {
  if (!v.is_array() || (v.size() != 3 && !(version >= 2 && v.size() == 4))) {
    return set_error(error, path + (version >= 2 ? ": must be an array [phase, reads, writes] or [phase, reads, writes, writebacks]"
                                                 : ": must be an array [phase, reads, writes]"));
  }
  for (const auto& x : v) {
    if (!x.is_number_unsigned()) return set_error(error, path + ": entries must be non-negative integers");
  }
  const uint64_t phase = v[0].get<uint64_t>();
  if (phase > std::numeric_limits<uint32_t>::max()) {
    return set_error(error, path + ": phase " + std::to_string(phase) + " does not fit in 32 bits");
  }
  out->phase = static_cast<uint32_t>(phase);
  out->reads = v[1].get<uint64_t>();
  out->writes = v[2].get<uint64_t>();
  out->writebacks = v.size() == 4 ? v[3].get<uint64_t>() : 0;
  return true;
}

bool read_object(const json& v, const std::string& path, int version, ObjectProfile* o, std::string* error) {
  Fields f(v, path, error);
  if (!f.check_keys({"tag", "site", "occurrence", "size", "birth_phase", "death_phase", "persistent",
                     "accesses"})) {
    return false;
  }
  if (!f.hash("tag", true, &o->tag) || !f.hash("site", false, &o->site) ||
      !f.u32("occurrence", false, &o->occurrence) || !f.u64("size", true, &o->size) ||
      !f.u32("birth_phase", true, &o->birth_phase) || !f.u32("death_phase", true, &o->death_phase) ||
      !f.boolean("persistent", false, &o->persistent)) {
    return false;
  }
  const json* acc = f.array("accesses", false);
  if (!f.ok()) return false;
  if (acc == nullptr) return true;
  o->accesses.resize(acc->size());
  for (size_t i = 0; i < acc->size(); ++i) {
    const std::string p = path + ".accesses[" + std::to_string(i) + "]";
    if (!read_access((*acc)[i], p, version, &o->accesses[i], error)) return false;
  }
  return true;
}

bool read_document(const json& doc, StepProfile* p, std::string* error) {
  Fields f(doc, "", error);
  // The keys of version 2; the version-2 ones are refused below in a version-1 document.
  if (!f.check_keys({"format", "version", "period", "step_time_ns", "peak_object_bytes", "profiled_steps",
                     "sampler", "sampler_source", "sample_period", "samples_lost", "writebacks", "program",
                     "phases", "objects"})) {
    return false;
  }
  uint64_t version = 0;
  std::string format;
  if (!f.str("format", true, &format)) return false;
  if (format != kProfileFormatName) {
    return set_error(error, "format: \"" + format + "\" is not \"" + std::string(kProfileFormatName) + "\"");
  }
  if (!f.u64("version", true, &version)) return false;
  if (version < 1 || version > static_cast<uint64_t>(kProfileFormatVersion)) {
    return set_error(error, "version: " + std::to_string(version) + " is not supported (this reader knows 1 to " +
                                std::to_string(kProfileFormatVersion) + ")");
  }
  if (version == 1) {
    for (const char* key : {"sampler_source", "samples_lost", "writebacks"}) {
      if (doc.contains(key)) return set_error(error, std::string(key) + ": unknown field in a version-1 profile");
    }
  }
  *p = StepProfile{};
  if (!f.u32("period", true, &p->period) || !f.u64("step_time_ns", false, &p->step_time_ns) ||
      !f.u64("peak_object_bytes", false, &p->peak_object_bytes) ||
      !f.u32("profiled_steps", false, &p->profiled_steps) || !f.str("sampler", true, &p->sampler) ||
      !f.u64("sample_period", false, &p->sample_period) || !f.str("program", false, &p->program) ||
      !f.str("sampler_source", false, &p->sampler_source) || !f.u64("samples_lost", false, &p->samples_lost) ||
      !f.boolean("writebacks", false, &p->writebacks_counted)) {
    return false;
  }
  const json* phases = f.array("phases", true);
  if (phases == nullptr) return false;
  // Checked before the vector is sized, so a bogus period cannot cost memory.
  if (phases->size() != p->period) {
    return set_error(error, "phases: has " + std::to_string(phases->size()) + " entries, period is " +
                                std::to_string(p->period));
  }
  p->phases.resize(phases->size());
  for (size_t i = 0; i < phases->size(); ++i) {
    Fields pf((*phases)[i], "phases[" + std::to_string(i) + "]", error);
    if (!pf.check_keys({"duration_ns"}) || !pf.u64("duration_ns", true, &p->phases[i].duration_ns)) {
      return false;
    }
  }
  const json* objects = f.array("objects", true);
  if (objects == nullptr) return false;
  p->objects.resize(objects->size());
  for (size_t i = 0; i < objects->size(); ++i) {
    if (!read_object((*objects)[i], "objects[" + std::to_string(i) + "]", static_cast<int>(version), &p->objects[i],
                     error)) {
      return false;
    }
  }
  return validate_profile(*p, error);
}

bool in_lifetime(const ObjectProfile& o, uint32_t phase, uint32_t period) {
  if (o.death_phase < period) return phase >= o.birth_phase && phase <= o.death_phase;
  return phase >= o.birth_phase || phase <= o.death_phase - period;
}

void append_object(const ObjectProfile& o, std::string* s) {
  *s += "{\"tag\":\"" + hex64(o.tag) + "\",\"site\":\"" + hex64(o.site) +
        "\",\"occurrence\":" + std::to_string(o.occurrence) + ",\"size\":" + std::to_string(o.size) +
        ",\"birth_phase\":" + std::to_string(o.birth_phase) +
        ",\"death_phase\":" + std::to_string(o.death_phase) +
        ",\"persistent\":" + (o.persistent ? "true" : "false") + ",\"accesses\":[";
  for (size_t i = 0; i < o.accesses.size(); ++i) {
    const PhaseAccess& a = o.accesses[i];
    if (i > 0) *s += ',';
    *s += '[' + std::to_string(a.phase) + ',' + std::to_string(a.reads) + ',' + std::to_string(a.writes);
    if (a.writebacks > 0) *s += ',' + std::to_string(a.writebacks);
    *s += ']';
  }
  *s += "]}";
}

std::string json_string(const std::string& v) {
  return json(v).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Version 2 only when the profile has something version 1 cannot say.
bool needs_version_2(const StepProfile& p) {
  if (!p.sampler_source.empty() || p.samples_lost > 0 || p.writebacks_counted) return true;
  for (const ObjectProfile& o : p.objects) {
    for (const PhaseAccess& a : o.accesses) {
      if (a.writebacks > 0) return true;
    }
  }
  return false;
}

}  // namespace

bool validate_profile(const StepProfile& p, std::string* error) {
  if (p.period == 0) return set_error(error, "period: must be at least 1");
  if (p.phases.size() != p.period) {
    return set_error(error, "phases: has " + std::to_string(p.phases.size()) + " entries, period is " +
                                std::to_string(p.period));
  }
  if (p.sampler != "pebs" && p.sampler != "ibs" && p.sampler != "software" && p.sampler != "none") {
    return set_error(error, "sampler: \"" + p.sampler + "\" is not one of pebs, ibs, software, none");
  }
  if (!p.sampler_source.empty() && p.sampler_source != "perf_event" && p.sampler_source != "qemu-slowtier") {
    return set_error(error, "sampler_source: \"" + p.sampler_source + "\" is not one of perf_event, qemu-slowtier");
  }
  const uint64_t period = p.period;
  std::unordered_set<uint64_t> tags;
  tags.reserve(p.objects.size());
  for (size_t i = 0; i < p.objects.size(); ++i) {
    const ObjectProfile& o = p.objects[i];
    const std::string at = "objects[" + std::to_string(i) + "].";
    if (o.size == 0) return set_error(error, at + "size: must be greater than 0");
    if (!tags.insert(o.tag).second) return set_error(error, at + "tag: " + hex64(o.tag) + " appears twice");
    if (o.birth_phase >= period) {
      return set_error(error, at + "birth_phase: " + std::to_string(o.birth_phase) +
                                  " is not below period (" + std::to_string(period) + ")");
    }
    if (o.death_phase < o.birth_phase) {
      return set_error(error, at + "death_phase: " + std::to_string(o.death_phase) +
                                  " is below birth_phase (" + std::to_string(o.birth_phase) + ")");
    }
    if (o.death_phase >= 2 * period) {
      return set_error(error, at + "death_phase: " + std::to_string(o.death_phase) +
                                  " is not below 2*period (" + std::to_string(2 * period) + ")");
    }
    if (o.persistent && (o.birth_phase != 0 || o.death_phase != period - 1)) {
      return set_error(error, at + "persistent: a persistent object must have birth_phase 0 and death_phase " +
                                  std::to_string(period - 1));
    }
    for (size_t j = 0; j < o.accesses.size(); ++j) {
      const uint32_t ph = o.accesses[j].phase;
      const std::string where = at + "accesses[" + std::to_string(j) + "]: phase " + std::to_string(ph);
      if (ph >= period) return set_error(error, where + " is not below period (" + std::to_string(period) + ")");
      if (j > 0 && ph <= o.accesses[j - 1].phase) {
        return set_error(error, where + " does not follow phase " + std::to_string(o.accesses[j - 1].phase) +
                                    " (accesses must be sorted by phase, one entry per phase)");
      }
      if (!in_lifetime(o, ph, p.period)) return set_error(error, where + " is outside the object's lifetime");
      if (o.accesses[j].writebacks > 0 && !p.writebacks_counted) {
        return set_error(error, where + " has write-backs, but the profile does not count them (\"writebacks\": true)");
      }
    }
  }
  return true;
}

bool parse_profile(std::string_view text, StepProfile* out, std::string* error) {
  if (out == nullptr) return set_error(error, "parse_profile: out is null");
  try {
    // keys_at[d] holds the keys seen so far in the innermost open object whose keys arrive at depth
    // d. Keyed by depth rather than pushed/popped per object because the library does not report
    // the end of objects it discarded.
    std::vector<std::unordered_set<std::string>> keys_at(kMaxDepth + 2);
    std::string structure_error;
    auto callback = [&](int depth, json::parse_event_t event, json& value) -> bool {
      if (!structure_error.empty()) return false;  // stop building anything once the document is bad
      if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) {
        if (depth >= kMaxDepth) {
          structure_error = "nesting deeper than " + std::to_string(kMaxDepth) + " levels";
          return false;
        }
        if (event == json::parse_event_t::object_start) keys_at[static_cast<size_t>(depth) + 1].clear();
      } else if (event == json::parse_event_t::key && depth >= 0 && depth <= kMaxDepth) {
        const std::string* key = value.get_ptr<const std::string*>();
        if (key != nullptr && !keys_at[static_cast<size_t>(depth)].insert(*key).second) {
          structure_error = "duplicate key \"" + *key + "\"";
          return false;
        }
      }
      return true;
    };
    json doc = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true);
    if (!structure_error.empty()) return set_error(error, "malformed profile: " + structure_error);
    return read_document(doc, out, error);
  } catch (const json::exception& e) {
    return set_error(error, std::string("malformed profile: ") + e.what());
  } catch (const std::exception& e) {
    return set_error(error, std::string("cannot parse profile: ") + e.what());
  } catch (...) {
    return set_error(error, "cannot parse profile: unknown failure");
  }
}

std::string serialize_profile(const StepProfile& p) {
  try {
    std::string s = "{\n\"format\": \"" + std::string(kProfileFormatName) + "\",\n";
    const bool v2 = needs_version_2(p);
    s += "\"version\": " + std::string(v2 ? "2" : "1") + ",\n";
    s += "\"period\": " + std::to_string(p.period) + ",\n";
    s += "\"step_time_ns\": " + std::to_string(p.step_time_ns) + ",\n";
    s += "\"peak_object_bytes\": " + std::to_string(p.peak_object_bytes) + ",\n";
    s += "\"profiled_steps\": " + std::to_string(p.profiled_steps) + ",\n";
    s += "\"sampler\": " + json_string(p.sampler) + ",\n";
    if (v2) s += "\"sampler_source\": " + json_string(p.sampler_source) + ",\n";
    s += "\"sample_period\": " + std::to_string(p.sample_period) + ",\n";
    if (v2) {
      s += "\"samples_lost\": " + std::to_string(p.samples_lost) + ",\n";
      s += "\"writebacks\": " + std::string(p.writebacks_counted ? "true" : "false") + ",\n";
    }
    s += "\"program\": " + json_string(p.program) + ",\n";
    s += "\"phases\": [";
    for (size_t i = 0; i < p.phases.size(); ++i) {
      if (i > 0) s += ',';
      s += "{\"duration_ns\":" + std::to_string(p.phases[i].duration_ns) + '}';
    }
    s += "],\n\"objects\": [";
    for (size_t i = 0; i < p.objects.size(); ++i) {
      s += i > 0 ? ",\n" : "\n";
      append_object(p.objects[i], &s);
    }
    s += p.objects.empty() ? "]\n}\n" : "\n]\n}\n";
    return s;
  } catch (...) {
    return std::string();
  }
}

bool read_profile_file(const std::string& path, StepProfile* out, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return set_error(error, path + ": cannot open: " + std::strerror(errno));
  std::string text;
  bool ok = true;
  std::string why;
  try {
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
      if (text.size() + n > kMaxProfileFileBytes) {
        ok = false;
        why = "larger than " + std::to_string(kMaxProfileFileBytes) + " bytes";
        break;
      }
      text.append(buf, n);
    }
    if (ok && std::ferror(f)) {
      ok = false;
      why = std::string("read error: ") + std::strerror(errno);
    }
  } catch (...) {
    ok = false;
    why = "out of memory";
  }
  std::fclose(f);
  if (!ok) return set_error(error, path + ": " + why);
  std::string parse_error;
  if (!parse_profile(text, out, &parse_error)) return set_error(error, path + ": " + parse_error);
  return true;
}

bool write_profile_file(const std::string& path, const StepProfile& p, std::string* error) {
  std::string invalid;
  if (!validate_profile(p, &invalid)) return set_error(error, path + ": refusing to write an invalid profile: " + invalid);
  const std::string text = serialize_profile(p);
  if (text.empty()) return set_error(error, path + ": out of memory while serializing");
  if (const Status written = write_file_replacing(path, text); !written.is_ok()) {
    return set_error(error, written.message());
  }
  return true;
}

}  // namespace sentinel
