// Sentinel's configuration: environment variables with the prefix SENTINEL_, parsed strictly.
//
// One table (config_variables()) lists every variable with its accepted values, default and meaning; it
// drives parsing, the unknown-variable check, `sentinel run --help`, the CLI's option mapping and the test
// that keeps README's table complete.
//
// parse_config never allocates: it runs in the runtime's initialise(), from libsentinel's constructor
// (preload/override.cc), before Sentinel's allocator is set up, where an allocation would re-enter it. On the first invalid
// value it stops and returns a failed Status (core/status.h) whose message is one line naming the variable,
// the value and what is accepted; the caller then runs as a pure pass-through allocator.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/budget_spec.h"
#include "core/output_path.h"
#include "core/status.h"

namespace sentinel {

enum class Mode : uint8_t {
  kPassthrough,  // forward every call to the system allocator; track nothing
  kTrack,        // objects, tags, steps and statistics; placement under the budget, first touch
  kProfile,      // kTrack, plus an access profile of a few steps written to SENTINEL_PROFILE_OUT
  kManaged,      // profile (or read a profile / plan), plan, then move objects along the plan every step
};

enum class SamplerChoiceSetting : uint8_t { kAuto, kPebs, kIbs, kSoftware, kNone };
// SENTINEL_CLOCK: what Sentinel measures the program with (os/measure_clock.h). auto: the slow-tier
// emulator's virtual clock inside the two-node guest (SENTINEL_IN_GUEST) when its plugin answers.
enum class ClockSetting : uint8_t { kAuto, kMonotonic, kEmulator };

// Where PMU samples may come from (SENTINEL_PMU_SOURCE): auto = perf_event_open, and for
// SENTINEL_SAMPLER=pebs the slow-tier QEMU plugin where perf_event_open fails; perf = only
// perf_event_open; qemu-slowtier = only the plugin (docs/slow-tier-emulator.md).
enum class PmuSourceChoice : uint8_t { kAuto, kPerf, kQemuSlowtier };

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
  // Placement.
  BudgetSpec fast_budget;                 // SENTINEL_FAST_BUDGET
  char job[128] = {};                     // SENTINEL_JOB: ranks of one job share the host budget; "none" = not
  int32_t fast_node = -1;                 // SENTINEL_FAST_NODE: -1 = detected
  int32_t slow_node = -1;                 // SENTINEL_SLOW_NODE: -1 = detected
  char sysfs_root[kPathMax] = "/sys";     // SENTINEL_SYSFS_ROOT (tests fake a topology with it)
  bool dry_run = false;                   // SENTINEL_DRY_RUN: simulate the slow node, book placement (os/dry_run.h)
  // Profiling (SENTINEL_MODE=profile, and managed mode before it has a plan).
  SamplerChoiceSetting sampler = SamplerChoiceSetting::kAuto;  // SENTINEL_SAMPLER
  ClockSetting clock = ClockSetting::kAuto;                     // SENTINEL_CLOCK
  uint32_t warmup_steps = 1;              // SENTINEL_WARMUP_STEPS: steps skipped before profiling
  uint32_t profile_steps = 2;             // SENTINEL_PROFILE_STEPS: steps profiled
  char profile_out[kPathMax] = "sentinel-profile.json";  // SENTINEL_PROFILE_OUT
  bool profile_out_set = false;           // SENTINEL_PROFILE_OUT was given
  uint64_t sample_period = 10007;         // SENTINEL_SAMPLE_PERIOD: PMU events per sample
  PmuSourceChoice pmu_source = PmuSourceChoice::kAuto;  // SENTINEL_PMU_SOURCE
  uint64_t pmu_ring_bytes = 0;            // SENTINEL_PMU_RING: the emulated PMU's ring; 0 = by the period
  // Managed mode.
  char profile_in[kPathMax] = {};         // SENTINEL_PROFILE_IN: start from this profile
  uint32_t profile_wait_s = 300;          // SENTINEL_PROFILE_WAIT: a follower rank waits this long for the leader's
  char plan_in[kPathMax] = {};            // SENTINEL_PLAN: execute this plan
  char tier[kPathMax] = "cxl";            // SENTINEL_TIER: tier model the in-process planner plans for
  char timeline_path[kPathMax] = {};      // SENTINEL_TIMELINE: executed timeline of managed steps
  uint32_t timeline_steps = 3;            // SENTINEL_TIMELINE_STEPS: managed steps written to it
  uint32_t replan_rounds = 8;             // SENTINEL_REPLAN_ROUNDS: late-prefetch replans at most
  uint32_t placement_check = 0;           // SENTINEL_PLACEMENT_CHECK: query page nodes every N phases
  char status_path[kPathMax] = {};        // SENTINEL_STATUS: live status file (core/live_status.h)
  // Set by resolve_output_paths: the path was a per-process pattern (%p). A process that made no object in a
  // training step then writes no such file (a launch script's shell, cat and mktemp inherit the variable, and
  // torch.compile's compiler processes: docs/distributed.md); a fixed path is written whatever the process did.
  bool stats_per_process = false, trace_per_process = false, timeline_per_process = false;
  // What resolve_output_paths changed (suffixes added to keep processes apart), one line each; logged
  // once at start.
  char output_note[1024] = {};

  // Whether a completed profile goes to profile_out.
  bool write_profile() const { return mode == Mode::kProfile || profile_out_set; }
};

// One configuration variable, for parsing and for everything that lists them.
struct ConfigVariable {
  const char* name;
  const char* values;        // what is accepted, as the error message and the help say it
  const char* default_text;  // as README and the help show it
  const char* meaning;
  const char* cli_option;    // `sentinel run` option that sets it, or nullptr
};
// Every variable the runtime reads, in the order of README's table: config_variable(0 .. count - 1).
size_t config_variable_count() noexcept;
const ConfigVariable& config_variable(size_t i) noexcept;

// Looks a variable up; returns nullptr when it is not set.
using EnvLookup = const char* (*)(const char* name, void* ctx);

// Fills *out from the environment seen through `lookup`. On the first invalid value, a failure whose
// message is one line (no trailing newline); *out is then unchanged.
Status parse_config(EnvLookup lookup, void* ctx, Config* out) noexcept;

// The same over the process environment.
Status parse_config_from_environ(Config* out) noexcept;

// Resolves the output path variables (SENTINEL_LOG_FILE, SENTINEL_STATS, SENTINEL_TRACE,
// SENTINEL_PROFILE_OUT when a profile is written, SENTINEL_TIMELINE) for the process `id` started at
// `start_time`, with the patterns and the rule of core/output_path.h; claims go to `claims` (may be
// null). Notes go to out->output_note. A failure with a one-line message on the first path that cannot be
// resolved. Makes system calls (claims): call it once, at start-up, outside the allocation path.
Status resolve_output_paths(Config* out, const ProcessIdentity& id, uint64_t start_time,
                            OutputClaims* claims) noexcept;

// resolve_output_paths for this process, claiming in /dev/shm; release_output_claims() removes this
// process's claims at its exit.
Status resolve_output_paths_of_this_process(Config* out) noexcept;
void release_output_claims() noexcept;

// Reports the first SENTINEL_* variable in the environment that Sentinel does not know (a likely typo),
// as a one-line warning in `warning`; returns false when there is none. Variables of Sentinel's scripts
// (SENTINEL_GUEST_*, SENTINEL_BENCH_*, SENTINEL_TEST_*, SENTINEL_IN_GUEST) are not the runtime's and
// are skipped.
bool find_unknown_variable(char* warning, size_t warning_cap) noexcept;

const char* mode_name(Mode m) noexcept;
const char* log_level_name(LogLevel l) noexcept;
const char* sampler_setting_name(SamplerChoiceSetting s) noexcept;
const char* pmu_source_setting_name(PmuSourceChoice s) noexcept;
// The emulated PMU's ring: SENTINEL_PMU_RING, or by default 64 MiB at period 1 down to 1 MiB at period
// 64 and above (a ring holds what one drain per phase reads: docs/slow-tier-emulator.md).
uint64_t emulated_pmu_ring_bytes(const Config& c) noexcept;

}  // namespace sentinel
