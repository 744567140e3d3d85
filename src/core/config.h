// Sentinel's configuration: environment variables with the prefix SENTINEL_, parsed strictly.
//
// parse_config never allocates (it runs during the first malloc of the process). On the first invalid
// value it stops and fills `error` with one line naming the variable, the value and what is accepted;
// the caller then runs as a pure pass-through allocator.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sentinel {

enum class Mode : uint8_t {
  kPassthrough,  // forward every call to the system allocator; track nothing
  kTrack,        // objects, tags, steps and statistics; no placement, no migration
  kProfile,      // kTrack, plus an access profile of a few steps written to SENTINEL_PROFILE_OUT
};

enum class SamplerChoiceSetting : uint8_t { kAuto, kPebs, kIbs, kSoftware, kNone };

enum class LogLevel : uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kOff };

struct Config {
  static constexpr size_t kPathMax = 512;

  Mode mode = Mode::kTrack;
  uint64_t min_object = 64 * 1024;        // SENTINEL_MIN_OBJECT: smallest allocation that is an object
  LogLevel log_level = LogLevel::kWarn;   // SENTINEL_LOG
  char log_file[kPathMax] = {};           // SENTINEL_LOG_FILE: empty = stderr
  char stats_path[kPathMax] = {};         // SENTINEL_STATS: JSON summary at exit; empty = none
  uint32_t stack_depth = 16;              // SENTINEL_STACK_DEPTH: frames hashed into a call-site
  uint64_t reserve_bytes = 256ull << 30;  // SENTINEL_RESERVE: address space reserved for objects
  char trace_path[kPathMax] = {};         // SENTINEL_TRACE: allocation-event trace at exit; empty = none
  // Profiling (SENTINEL_MODE=profile).
  SamplerChoiceSetting sampler = SamplerChoiceSetting::kAuto;  // SENTINEL_SAMPLER
  uint32_t warmup_steps = 1;              // SENTINEL_WARMUP_STEPS: steps skipped before profiling
  uint32_t profile_steps = 2;             // SENTINEL_PROFILE_STEPS: steps profiled
  char profile_out[kPathMax] = "sentinel-profile.json";  // SENTINEL_PROFILE_OUT
  uint64_t sample_period = 10007;         // SENTINEL_SAMPLE_PERIOD: PMU events per sample
};

// Looks a variable up; returns nullptr when it is not set.
using EnvLookup = const char* (*)(const char* name, void* ctx);

// Fills *out from the environment seen through `lookup`. Returns false and writes a one-line message
// (no trailing newline) into error[0..error_cap) on the first invalid value.
bool parse_config(EnvLookup lookup, void* ctx, Config* out, char* error, size_t error_cap) noexcept;

// The same over the process environment.
bool parse_config_from_environ(Config* out, char* error, size_t error_cap) noexcept;

// Reports the first SENTINEL_* variable in the environment that Sentinel does not know (a likely typo),
// as a one-line warning in `warning`; returns false when there is none. Variables of Sentinel's scripts
// (SENTINEL_GUEST_*, SENTINEL_BENCH_*, SENTINEL_TEST_*, SENTINEL_IN_GUEST) are not the runtime's and
// are skipped.
bool find_unknown_variable(char* warning, size_t warning_cap) noexcept;

const char* mode_name(Mode m) noexcept;
const char* log_level_name(LogLevel l) noexcept;
const char* sampler_setting_name(SamplerChoiceSetting s) noexcept;

}  // namespace sentinel
