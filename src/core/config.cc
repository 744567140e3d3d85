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

bool parse_config(EnvLookup lookup, void* ctx, Config* out, char* error, size_t cap) noexcept {
  Config c;
  if (const char* v = lookup("SENTINEL_MODE", ctx)) {
    bool found = false;
    for (const auto& e : kModes) {
      if (str_equal(v, e.name)) {
        c.mode = e.mode;
        found = true;
      }
    }
    if (!found) return invalid(error, cap, "SENTINEL_MODE", v, kModeChoices), false;
  }
  if (const char* v = lookup("SENTINEL_MIN_OBJECT", ctx)) {
    uint64_t bytes;
    if (!parse_bytes(v, &bytes) || bytes < 4096 || bytes > (1ull << 30)) {
      return invalid(error, cap, "SENTINEL_MIN_OBJECT", v,
                     "a byte count from 4096 to 1G, with optional K/M/G suffix (e.g. 64K)"),
             false;
    }
    c.min_object = bytes;
  }
  if (const char* v = lookup("SENTINEL_LOG", ctx)) {
    bool found = false;
    for (const auto& e : kLevels) {
      if (str_equal(v, e.name)) {
        c.log_level = e.level;
        found = true;
      }
    }
    if (!found) {
      return invalid(error, cap, "SENTINEL_LOG", v, "trace, debug, info, warn, error, off"), false;
    }
  }
  if (const char* v = lookup("SENTINEL_LOG_FILE", ctx)) {
    if (!copy_path(v, c.log_file, sizeof c.log_file)) {
      return invalid(error, cap, "SENTINEL_LOG_FILE", v, "a non-empty file path shorter than 512 bytes"),
             false;
    }
  }
  if (const char* v = lookup("SENTINEL_STATS", ctx)) {
    if (!copy_path(v, c.stats_path, sizeof c.stats_path)) {
      return invalid(error, cap, "SENTINEL_STATS", v, "a non-empty file path shorter than 512 bytes"),
             false;
    }
  }
  if (const char* v = lookup("SENTINEL_TRACE", ctx)) {
    if (!copy_path(v, c.trace_path, sizeof c.trace_path)) {
      return invalid(error, cap, "SENTINEL_TRACE", v, "a non-empty file path shorter than 512 bytes"),
             false;
    }
  }
  if (const char* v = lookup("SENTINEL_STACK_DEPTH", ctx)) {
    uint64_t depth;
    if (!parse_uint(v, &depth) || depth < 1 || depth > 32) {
      return invalid(error, cap, "SENTINEL_STACK_DEPTH", v, "an integer from 1 to 32"), false;
    }
    c.stack_depth = static_cast<uint32_t>(depth);
  }
  if (const char* v = lookup("SENTINEL_RESERVE", ctx)) {
    uint64_t bytes;
    if (!parse_bytes(v, &bytes) || bytes < (64ull << 20) || bytes > (64ull << 40)) {
      return invalid(error, cap, "SENTINEL_RESERVE", v, "a byte count from 64M to 64T (e.g. 256G)"),
             false;
    }
    c.reserve_bytes = bytes;
  }
  if (const char* v = lookup("SENTINEL_SAMPLER", ctx)) {
    bool found = false;
    for (const auto& e : kSamplers) {
      if (str_equal(v, e.name)) {
        c.sampler = e.setting;
        found = true;
      }
    }
    if (!found) return invalid(error, cap, "SENTINEL_SAMPLER", v, "auto, pebs, ibs, software, none"), false;
  }
  if (const char* v = lookup("SENTINEL_WARMUP_STEPS", ctx)) {
    uint64_t n;
    if (!parse_uint(v, &n) || n > 100000) {
      return invalid(error, cap, "SENTINEL_WARMUP_STEPS", v, "an integer from 0 to 100000"), false;
    }
    c.warmup_steps = static_cast<uint32_t>(n);
  }
  if (const char* v = lookup("SENTINEL_PROFILE_STEPS", ctx)) {
    uint64_t n;
    if (!parse_uint(v, &n) || n < 1 || n > 100) {
      return invalid(error, cap, "SENTINEL_PROFILE_STEPS", v, "an integer from 1 to 100"), false;
    }
    c.profile_steps = static_cast<uint32_t>(n);
  }
  if (const char* v = lookup("SENTINEL_PROFILE_OUT", ctx)) {
    if (!copy_path(v, c.profile_out, sizeof c.profile_out)) {
      return invalid(error, cap, "SENTINEL_PROFILE_OUT", v, "a non-empty file path shorter than 512 bytes"),
             false;
    }
  }
  if (const char* v = lookup("SENTINEL_SAMPLE_PERIOD", ctx)) {
    uint64_t n;
    if (!parse_uint(v, &n) || n < 100 || n > 100000000) {
      return invalid(error, cap, "SENTINEL_SAMPLE_PERIOD", v, "an integer from 100 to 100000000"), false;
    }
    c.sample_period = n;
  }
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
