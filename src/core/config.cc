#include "core/config.h"

#include "core/env.h"
#include "core/text_buf.h"

namespace sentinel {
namespace {

struct NamedMode {
  const char* name;
  Mode mode;
};
constexpr NamedMode kModes[] = {
    {"passthrough", Mode::kPassthrough}, {"track", Mode::kTrack}, {"profile", Mode::kProfile}};
constexpr const char* kModeChoices = "passthrough, track, profile";

struct NamedSampler {
  const char* name;
  SamplerChoiceSetting setting;
};
constexpr NamedSampler kSamplers[] = {{"auto", SamplerChoiceSetting::kAuto},
                                      {"pebs", SamplerChoiceSetting::kPebs},
                                      {"ibs", SamplerChoiceSetting::kIbs},
                                      {"software", SamplerChoiceSetting::kSoftware},
                                      {"none", SamplerChoiceSetting::kNone}};

struct NamedLevel {
  const char* name;
  LogLevel level;
};
constexpr NamedLevel kLevels[] = {{"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug},
                                  {"info", LogLevel::kInfo},   {"warn", LogLevel::kWarn},
                                  {"error", LogLevel::kError}, {"off", LogLevel::kOff}};

constexpr const char* kKnownVariables[] = {"SENTINEL_MODE",      "SENTINEL_MIN_OBJECT",
                                           "SENTINEL_LOG",       "SENTINEL_LOG_FILE",
                                           "SENTINEL_STATS",     "SENTINEL_STACK_DEPTH",
                                           "SENTINEL_RESERVE",   "SENTINEL_TRACE",
                                           "SENTINEL_FAST_BUDGET", "SENTINEL_FAST_NODE",
                                           "SENTINEL_SLOW_NODE", "SENTINEL_SYSFS_ROOT",
                                           "SENTINEL_SAMPLER",   "SENTINEL_WARMUP_STEPS",
                                           "SENTINEL_PROFILE_STEPS", "SENTINEL_PROFILE_OUT",
                                           "SENTINEL_SAMPLE_PERIOD"};
constexpr const char* kForeignPrefixes[] = {"SENTINEL_GUEST_", "SENTINEL_BENCH_", "SENTINEL_TEST_",
                                            "SENTINEL_IN_GUEST"};

void invalid(char* error, size_t cap, const char* var, const char* value, const char* accepted) {
  TextBuf msg(error, cap);
  msg.put("sentinel: invalid ").put(var).put("='").put(value).put("': accepted ").put(accepted);
  msg.put("; running as a pass-through allocator");
}

bool copy_path(const char* value, char* dst, size_t cap) {
  size_t n = 0;
  while (value[n] != '\0') {
    if (n + 1 >= cap) return false;
    dst[n] = value[n];
    ++n;
  }
  dst[n] = '\0';
  return n > 0;
}

bool starts_with(const char* s, const char* prefix) {
  while (*prefix != '\0' && *s == *prefix) {
    ++s;
    ++prefix;
  }
  return *prefix == '\0';
}

}  // namespace

const char* mode_name(Mode m) noexcept {
  for (const auto& e : kModes)
    if (e.mode == m) return e.name;
  return "?";
}

const char* sampler_setting_name(SamplerChoiceSetting s) noexcept {
  for (const auto& e : kSamplers)
    if (e.setting == s) return e.name;
  return "?";
}

const char* log_level_name(LogLevel l) noexcept {
  for (const auto& e : kLevels)
    if (e.level == l) return e.name;
  return "?";
}

namespace {

// Reads one variable at a time into a Config; the first invalid value stops parsing with one message.
class Parser {
 public:
  Parser(EnvLookup lookup, void* ctx, char* error, size_t cap) : lookup_(lookup), ctx_(ctx), error_(error), cap_(cap) {}
  bool ok() const { return ok_; }

  template <typename Entry, size_t N, typename T, typename Get>
  void choice(const char* var, const Entry (&table)[N], const char* accepted, T* out, Get get) {
    const char* v = value(var);
    if (v == nullptr) return;
    for (const Entry& e : table) {
      if (str_equal(v, e.name)) {
        *out = get(e);
        return;
      }
    }
    fail(var, v, accepted);
  }
  void path(const char* var, char* dst, size_t dst_cap) {
    const char* v = value(var);
    if (v != nullptr && !copy_path(v, dst, dst_cap)) fail(var, v, "a non-empty file path shorter than 512 bytes");
  }
  // An integer in [lo, hi]; with bytes, K/M/G/T suffixes are accepted.
  template <typename T>
  void number(const char* var, bool bytes, uint64_t lo, uint64_t hi, const char* accepted, T* out) {
    const char* v = value(var);
    if (v == nullptr) return;
    uint64_t n;
    if (!(bytes ? parse_bytes(v, &n) : parse_uint(v, &n)) || n < lo || n > hi) return fail(var, v, accepted);
    *out = static_cast<T>(n);
  }

 private:
  const char* value(const char* var) { return ok_ ? lookup_(var, ctx_) : nullptr; }
  void fail(const char* var, const char* value, const char* accepted) {
    invalid(error_, cap_, var, value, accepted);
    ok_ = false;
  }
  EnvLookup lookup_;
  void* ctx_;
  char* error_;
  size_t cap_;
  bool ok_ = true;
};

}  // namespace

bool parse_config(EnvLookup lookup, void* ctx, Config* out, char* error, size_t cap) noexcept {
  Config c;
  Parser p(lookup, ctx, error, cap);
  p.choice("SENTINEL_MODE", kModes, kModeChoices, &c.mode, [](const NamedMode& e) { return e.mode; });
  p.number("SENTINEL_MIN_OBJECT", true, 4096, 1ull << 30,
           "a byte count from 4096 to 1G, with optional K/M/G suffix (e.g. 64K)", &c.min_object);
  p.choice("SENTINEL_LOG", kLevels, "trace, debug, info, warn, error, off", &c.log_level,
           [](const NamedLevel& e) { return e.level; });
  p.path("SENTINEL_LOG_FILE", c.log_file, sizeof c.log_file);
  p.path("SENTINEL_STATS", c.stats_path, sizeof c.stats_path);
  p.path("SENTINEL_TRACE", c.trace_path, sizeof c.trace_path);
  p.number("SENTINEL_STACK_DEPTH", false, 1, 32, "an integer from 1 to 32", &c.stack_depth);
  p.number("SENTINEL_RESERVE", true, 64ull << 20, 64ull << 40, "a byte count from 64M to 64T (e.g. 256G)",
           &c.reserve_bytes);
  p.choice("SENTINEL_SAMPLER", kSamplers, "auto, pebs, ibs, software, none", &c.sampler,
           [](const NamedSampler& e) { return e.setting; });
  p.number("SENTINEL_WARMUP_STEPS", false, 0, 100000, "an integer from 0 to 100000", &c.warmup_steps);
  p.number("SENTINEL_PROFILE_STEPS", false, 1, 100, "an integer from 1 to 100", &c.profile_steps);
  p.path("SENTINEL_PROFILE_OUT", c.profile_out, sizeof c.profile_out);
  p.number("SENTINEL_SAMPLE_PERIOD", false, 100, 100000000, "an integer from 100 to 100000000", &c.sample_period);
  if (!p.ok()) return false;
  *out = c;
  return true;
}

static const char* environ_lookup(const char* name, void*) { return env_get(name); }

bool parse_config_from_environ(Config* out, char* error, size_t cap) noexcept {
  return parse_config(environ_lookup, nullptr, out, error, cap);
}

bool find_unknown_variable(char* warning, size_t cap) noexcept {
  bool found = false;
  env_for_each_with_prefix("SENTINEL_", [&](const char* entry) {
    if (found) return;
    for (const char* prefix : kForeignPrefixes)
      if (starts_with(entry, prefix)) return;
    for (const char* known : kKnownVariables) {
      const char* k = known;
      const char* e = entry;
      while (*k != '\0' && *e == *k) {
        ++k;
        ++e;
      }
      if (*k == '\0' && *e == '=') return;
    }
    TextBuf msg(warning, cap);
    msg.put("sentinel: unknown variable ignored: ");
    for (const char* e = entry; *e != '\0' && *e != '='; ++e) msg.put_char(*e);
    msg.put(" (known: SENTINEL_MODE, SENTINEL_MIN_OBJECT, SENTINEL_LOG, SENTINEL_LOG_FILE, "
            "SENTINEL_STATS, SENTINEL_STACK_DEPTH, SENTINEL_RESERVE, SENTINEL_TRACE, SENTINEL_SAMPLER, "
            "SENTINEL_WARMUP_STEPS, SENTINEL_PROFILE_STEPS, SENTINEL_PROFILE_OUT, SENTINEL_SAMPLE_PERIOD, "
            "SENTINEL_FAST_BUDGET, SENTINEL_FAST_NODE, SENTINEL_SLOW_NODE)");
    found = true;
  });
  return found;
}

}  // namespace sentinel
