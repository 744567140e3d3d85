#include "core/config.h"

#include <unistd.h>

#include "core/env.h"
#include "core/text_buf.h"

namespace sentinel {
namespace {

struct NamedMode {
  const char* name;
  Mode mode;
};
constexpr NamedMode kModes[] = {{"passthrough", Mode::kPassthrough},
                                {"track", Mode::kTrack},
                                {"profile", Mode::kProfile},
                                {"managed", Mode::kManaged}};

struct NamedSampler {
  const char* name;
  SamplerChoiceSetting setting;
};
constexpr NamedSampler kSamplers[] = {{"auto", SamplerChoiceSetting::kAuto},
                                      {"pebs", SamplerChoiceSetting::kPebs},
                                      {"ibs", SamplerChoiceSetting::kIbs},
                                      {"software", SamplerChoiceSetting::kSoftware},
                                      {"none", SamplerChoiceSetting::kNone}};

struct NamedPmuSource {
  const char* name;
  PmuSourceChoice setting;
};
constexpr NamedPmuSource kPmuSources[] = {{"auto", PmuSourceChoice::kAuto},
                                          {"perf", PmuSourceChoice::kPerf},
                                          {"qemu-slowtier", PmuSourceChoice::kQemuSlowtier}};

struct NamedClock {
  const char* name;
  ClockSetting setting;
};
constexpr NamedClock kClocks[] = {{"auto", ClockSetting::kAuto},
                                  {"monotonic", ClockSetting::kMonotonic},
                                  {"emulator", ClockSetting::kEmulator}};

struct NamedLevel {
  const char* name;
  LogLevel level;
};
constexpr NamedLevel kLevels[] = {{"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug},
                                  {"info", LogLevel::kInfo},   {"warn", LogLevel::kWarn},
                                  {"error", LogLevel::kError}, {"off", LogLevel::kOff}};

constexpr const char* kForeignPrefixes[] = {"SENTINEL_GUEST_", "SENTINEL_BENCH_", "SENTINEL_TEST_",
                                            "SENTINEL_IN_GUEST",
                                            // Variables of the project's scripts (build, tests, CI).
                                            "SENTINEL_BUILD_DIR", "SENTINEL_SKIP_GUEST", "SENTINEL_SANITIZERS",
                                            "SENTINEL_BIN", "SENTINEL_TORCH2_VENV"};

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

// Parses one variable's value into a Config; parse_config names the variable and what it accepts
// when the value is not accepted.
class Parser {
 public:
  explicit Parser(const char* value) : value_(value) {}
  bool ok() const { return ok_; }

  template <typename Entry, size_t N, typename T, typename Get>
  void choice(const Entry (&table)[N], T* out, Get get) {
    for (const Entry& e : table) {
      if (str_equal(value_, e.name)) {
        *out = get(e);
        return;
      }
    }
    ok_ = false;
  }
  void path(char* dst, size_t cap) { ok_ = copy_path(value_, dst, cap); }
  // A path that may hold %p, %r, %h, %% (core/output_path.h); expanded later by resolve_output_paths.
  void output_path(char* dst, size_t cap) {
    char expanded[Config::kPathMax];
    const char* why = nullptr;
    ok_ = copy_path(value_, dst, cap) && expand_output_path(value_, ProcessIdentity{}, expanded, sizeof expanded, &why);
  }
  // An integer in [lo, hi]; with bytes, K/M/G/T suffixes are accepted.
  template <typename T>
  void number(bool bytes, uint64_t lo, uint64_t hi, T* out) {
    uint64_t n;
    if (!(bytes ? parse_bytes(value_, &n) : parse_uint(value_, &n)) || n < lo || n > hi) {
      ok_ = false;
      return;
    }
    *out = static_cast<T>(n);
  }
  // A name for files: letters, digits and . _ - : only.
  void name(char* dst, size_t cap) {
    for (const char* v = value_; *v != '\0'; ++v) {
      const char ch = *v;
      const bool allowed = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                           ch == '.' || ch == '_' || ch == '-' || ch == ':';
      if (!allowed) {
        ok_ = false;
        return;
      }
    }
    ok_ = copy_path(value_, dst, cap);
  }
  void budget(BudgetSpec* out) { ok_ = parse_budget_spec(value_, out); }
  void flag(bool* out) {
    ok_ = str_equal(value_, "0") || str_equal(value_, "1");
    if (ok_) *out = str_equal(value_, "1");
  }
  // A byte count in [lo, hi] that is a power of two.
  void power_of_two_bytes(uint64_t lo, uint64_t hi, uint64_t* out) {
    uint64_t n = 0;
    number(true, lo, hi, &n);
    if (ok_ && (n & (n - 1)) != 0) ok_ = false;
    if (ok_) *out = n;
  }

 private:
  const char* value_;
  bool ok_ = true;
};

struct Entry {
  ConfigVariable var;
  void (*parse)(Parser& p, Config& c);
};

constexpr const char* kPathValues = "a non-empty file path shorter than 512 bytes";
constexpr const char* kOutputPathValues =
    "a non-empty file path shorter than 512 bytes; %p = pid, %r = rank, %h = host name, %% = % "
    "(docs/distributed.md)";

// README's table is checked against this one (tests/core/config_test.cc).
constexpr Entry kEntries[] = {
    {{"SENTINEL_MODE", "passthrough, track, profile, managed", "track",
      "what Sentinel does: nothing; track objects and steps (placement first-touch under the budget); also "
      "profile a few steps; also plan and move objects every step",
      "--mode"},
     [](Parser& p, Config& c) { p.choice(kModes, &c.mode, [](const NamedMode& e) { return e.mode; }); }},
    {{"SENTINEL_FAST_BUDGET", kBudgetGrammar, "unlimited",
      "fast-memory (DRAM) budget for objects, bytes or a share of the step's peak", "--fast-budget"},
     [](Parser& p, Config& c) { p.budget(&c.fast_budget); }},
    {{"SENTINEL_JOB", "a job name of letters, digits and . _ - : (at most 127), or none", "MASTER_ADDR:MASTER_PORT "
      "when both are set, else none",
      "the processes of one job on one host share SENTINEL_FAST_BUDGET through a ledger in /dev/shm "
      "(docs/distributed.md); none: each process has the whole budget",
      nullptr},
     [](Parser& p, Config& c) { p.name(c.job, sizeof c.job); }},
    {{"SENTINEL_FAST_NODE", "a NUMA node id from 0 to 1023", "detected", "the fast node, overriding detection",
      "--fast-node"},
     [](Parser& p, Config& c) { p.number(false, 0, 1023, &c.fast_node); }},
    {{"SENTINEL_SLOW_NODE", "a NUMA node id from 0 to 1023", "detected", "the slow node, overriding detection",
      "--slow-node"},
     [](Parser& p, Config& c) { p.number(false, 0, 1023, &c.slow_node); }},
    {{"SENTINEL_SYSFS_ROOT", kPathValues, "/sys", "where the NUMA topology is read (tests fake one)", nullptr},
     [](Parser& p, Config& c) { p.path(c.sysfs_root, sizeof c.sysfs_root); }},
    {{"SENTINEL_DRY_RUN", "0 or 1", "0",
      "1: the slow node is simulated from SENTINEL_TIER's model and binds and moves to it are booked, not made "
      "(managed mode on a machine without a slow node; docs/managed-mode.md)",
      nullptr},
     [](Parser& p, Config& c) { p.flag(&c.dry_run); }},
    {{"SENTINEL_MIN_OBJECT", "a byte count from 4096 to 1G, with optional K/M/G suffix (e.g. 64K)", "64K",
      "smallest allocation that is an object", "--min-object"},
     [](Parser& p, Config& c) { p.number(true, 4096, 1ull << 30, &c.min_object); }},
    {{"SENTINEL_LOG", "trace, debug, info, warn, error, off", "warn", "log level", "--log"},
     [](Parser& p, Config& c) { p.choice(kLevels, &c.log_level, [](const NamedLevel& e) { return e.level; }); }},
    {{"SENTINEL_LOG_FILE", kOutputPathValues, "stderr", "where the log goes", "--log-file"},
     [](Parser& p, Config& c) { p.output_path(c.log_file, sizeof c.log_file); }},
    {{"SENTINEL_STATS", kOutputPathValues, "none", "JSON summary written at exit", "--stats"},
     [](Parser& p, Config& c) { p.output_path(c.stats_path, sizeof c.stats_path); }},
    {{"SENTINEL_STACK_DEPTH", "an integer from 1 to 32", "16", "frames hashed into a call-site", "--stack-depth"},
     [](Parser& p, Config& c) { p.number(false, 1, 32, &c.stack_depth); }},
    {{"SENTINEL_RESERVE", "a byte count from 64M to 64T (e.g. 256G)", "256G", "address space reserved for objects",
      "--reserve"},
     [](Parser& p, Config& c) { p.number(true, 64ull << 20, 64ull << 40, &c.reserve_bytes); }},
    {{"SENTINEL_TRACE", kOutputPathValues, "none", "the last 8192 allocation events, written at exit", nullptr},
     [](Parser& p, Config& c) { p.output_path(c.trace_path, sizeof c.trace_path); }},
    {{"SENTINEL_SAMPLER", "auto, pebs, ibs, software, none", "auto", "how accesses are sampled while profiling",
      "--sampler"},
     [](Parser& p, Config& c) {
       p.choice(kSamplers, &c.sampler, [](const NamedSampler& e) { return e.setting; });
     }},
    {{"SENTINEL_CLOCK", "auto, monotonic, emulator", "auto",
      "what phase times, migrations and completions are measured with: CLOCK_MONOTONIC, or the slow-tier "
      "emulator's virtual clock (auto: the emulator's inside the two-node guest when its plugin answers)",
      nullptr},
     [](Parser& p, Config& c) { p.choice(kClocks, &c.clock, [](const NamedClock& e) { return e.setting; }); }},
    {{"SENTINEL_WARMUP_STEPS", "an integer from 0 to 100000", "1", "steps skipped before profiling", nullptr},
     [](Parser& p, Config& c) { p.number(false, 0, 100000, &c.warmup_steps); }},
    {{"SENTINEL_PROFILE_STEPS", "an integer from 1 to 100", "2", "steps profiled", nullptr},
     [](Parser& p, Config& c) { p.number(false, 1, 100, &c.profile_steps); }},
    {{"SENTINEL_PROFILE_OUT", kOutputPathValues, "sentinel-profile.json (profile mode only)",
      "where a completed profile is written", "--profile-out"},
     [](Parser& p, Config& c) {
       p.output_path(c.profile_out, sizeof c.profile_out);
       c.profile_out_set = p.ok();
     }},
    {{"SENTINEL_SAMPLE_PERIOD", "an integer from 1 to 100000000", "10007",
      "PMU events per sample; below 100 only for the emulated PMU (1: every miss, the ground truth)", nullptr},
     [](Parser& p, Config& c) { p.number(false, 1, 100000000, &c.sample_period); }},
    {{"SENTINEL_PMU_SOURCE", "auto, perf, qemu-slowtier", "auto",
      "where PMU samples come from: perf_event_open, or the slow-tier QEMU plugin (auto: the plugin for "
      "SENTINEL_SAMPLER=pebs where perf_event_open fails)",
      nullptr},
     [](Parser& p, Config& c) {
       p.choice(kPmuSources, &c.pmu_source, [](const NamedPmuSource& e) { return e.setting; });
     }},
    {{"SENTINEL_PMU_RING", "a power of two of bytes from 64K to 256M (e.g. 64M)", "64M at period 1 to 1M at 64",
      "the emulated PMU's sample ring", nullptr},
     [](Parser& p, Config& c) { p.power_of_two_bytes(64ull << 10, 256ull << 20, &c.pmu_ring_bytes); }},
    {{"SENTINEL_PROFILE_IN", kPathValues, "none", "managed mode: start from this recorded profile when it matches",
      "--profile-in"},
     [](Parser& p, Config& c) { p.path(c.profile_in, sizeof c.profile_in); }},
    {{"SENTINEL_PROFILE_WAIT", "an integer from 0 to 86400 (seconds)", "300",
      "managed mode, ranks of a job: how long a rank other than LOCAL_RANK 0 waits for that rank's profile "
      "before it profiles itself; 0: every rank profiles (docs/distributed.md)",
      nullptr},
     [](Parser& p, Config& c) { p.number(false, 0, 86400, &c.profile_wait_s); }},
    {{"SENTINEL_PLAN", kPathValues, "none", "managed mode: execute this plan (sentinel replay --write-plan)",
      "--plan"},
     [](Parser& p, Config& c) { p.path(c.plan_in, sizeof c.plan_in); }},
    {{"SENTINEL_TIER", "cxl, cxl-2m, optane, optane-2m, dram, or a tier file (docs/tier-model.md)", "cxl",
      "managed mode: the tier model the in-process planner plans for", "--tier"},
     [](Parser& p, Config& c) { p.path(c.tier, sizeof c.tier); }},
    {{"SENTINEL_TIMELINE", kOutputPathValues, "none", "managed mode: the executed timeline (docs/timeline-format.md)",
      "--timeline"},
     [](Parser& p, Config& c) { p.output_path(c.timeline_path, sizeof c.timeline_path); }},
    {{"SENTINEL_TIMELINE_STEPS", "an integer from 1 to 10000", "3", "managed steps written to the timeline",
      nullptr},
     [](Parser& p, Config& c) { p.number(false, 1, 10000, &c.timeline_steps); }},
    {{"SENTINEL_REPLAN_ROUNDS", "an integer from 0 to 100", "8",
      "managed mode: replans at most, to move late prefetches earlier", nullptr},
     [](Parser& p, Config& c) { p.number(false, 0, 100, &c.replan_rounds); }},
    {{"SENTINEL_PLACEMENT_CHECK", "an integer from 0 to 1000000", "0 (off)",
      "managed mode: every N managed phases, query the node of every planned object's pages (move_pages) and "
      "count how many bytes are where the plan wants them",
      nullptr},
     [](Parser& p, Config& c) { p.number(false, 0, 1000000, &c.placement_check); }},
    {{"SENTINEL_STATUS", kPathValues, "none",
      "a file the runtime keeps its live status in (core/live_status.h); `sentinel run` sets it on a terminal",
      nullptr},
     [](Parser& p, Config& c) { p.path(c.status_path, sizeof c.status_path); }},
};
constexpr size_t kEntryCount = sizeof kEntries / sizeof kEntries[0];

// A byte of a user's value or name as a message shows it: hostile text must not break the message into
// lines or send escape sequences to the terminal, so control bytes, bytes >= 0x7f, quotes and
// backslashes are written as \xNN.
void put_byte_escaped(TextBuf& msg, char byte) {
  const auto c = static_cast<unsigned char>(byte);
  if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\') {
    msg.put("\\x").put_char("0123456789abcdef"[c >> 4]).put_char("0123456789abcdef"[c & 15]);
  } else {
    msg.put_char(byte);
  }
}

// A value, escaped, cut short when long.
void put_value_escaped(TextBuf& msg, const char* value) {
  constexpr size_t kShownBytes = 40;  // escaped, at most 160 characters: the message fits 512 bytes
  size_t shown = 0;
  for (const char* p = value; *p != '\0'; ++p, ++shown) {
    if (shown == kShownBytes) {
      msg.put("...");
      return;
    }
    put_byte_escaped(msg, *p);
  }
}

Status invalid(const char* var, const char* value, const char* accepted) {
  char text[Status::kCapacity];
  TextBuf msg(text, sizeof text);
  msg.put(var).put("='");
  put_value_escaped(msg, value);
  msg.put("': accepted ").put(accepted);
  msg.put("; running as a pass-through allocator");
  return Status::error("sentinel: invalid ").append(text);
}

}  // namespace

size_t config_variable_count() noexcept { return kEntryCount; }
const ConfigVariable& config_variable(size_t i) noexcept { return kEntries[i].var; }

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

const char* pmu_source_setting_name(PmuSourceChoice s) noexcept {
  for (const auto& e : kPmuSources)
    if (e.setting == s) return e.name;
  return "?";
}

uint64_t emulated_pmu_ring_bytes(const Config& c) noexcept {
  if (c.pmu_ring_bytes != 0) return c.pmu_ring_bytes;
  uint64_t bytes = 64ull << 20;
  for (uint64_t p = c.sample_period; p > 1 && bytes > (1ull << 20); p >>= 1) bytes >>= 1;
  return bytes;
}

const char* log_level_name(LogLevel l) noexcept {
  for (const auto& e : kLevels)
    if (e.level == l) return e.name;
  return "?";
}

Status parse_config(EnvLookup lookup, void* ctx, Config* out) noexcept {
  Config c;
  for (const Entry& e : kEntries) {
    const char* value = lookup(e.var.name, ctx);
    if (value == nullptr) continue;
    Parser p(value);
    e.parse(p, c);
    if (!p.ok()) return invalid(e.var.name, value, e.var.values);
  }
  *out = c;
  return Status::ok();
}

Status resolve_output_paths(Config* c, const ProcessIdentity& id, uint64_t start_time, OutputClaims* claims) noexcept {
  struct OutputVariable {
    const char* name;
    char* path;
  };
  const OutputVariable outputs[] = {{"SENTINEL_LOG_FILE", c->log_file},
                                    {"SENTINEL_STATS", c->stats_path},
                                    {"SENTINEL_TRACE", c->trace_path},
                                    {"SENTINEL_PROFILE_OUT", c->write_profile() ? c->profile_out : nullptr},
                                    {"SENTINEL_TIMELINE", c->timeline_path}};
  for (const OutputVariable& v : outputs) {
    if (v.path == nullptr || v.path[0] == '\0') continue;
    if (v.path == c->stats_path) c->stats_per_process = pattern_has(v.path, 'p');
    if (v.path == c->trace_path) c->trace_per_process = pattern_has(v.path, 'p');
    if (v.path == c->timeline_path) c->timeline_per_process = pattern_has(v.path, 'p');
    const char* why = nullptr;
    if (!resolve_output_path(v.name, v.path, Config::kPathMax, id, start_time, claims, c->output_note,
                             sizeof c->output_note, &why)) {
      return Status::error("sentinel: ").append(v.name).append(": ").append(why).append(
          "; running as a pass-through allocator");
    }
  }
  return Status::ok();
}

namespace {
// Claims live in /dev/shm: shared by the processes of this host (and of this container), gone at reboot.
constinit OutputClaims g_claims("/dev/shm");
}  // namespace

Status resolve_output_paths_of_this_process(Config* c) noexcept {
  const ProcessIdentity id = current_identity();
  return resolve_output_paths(c, id, process_start_time(static_cast<pid_t>(id.pid)), &g_claims);
}

void release_output_claims() noexcept { g_claims.release_all(getpid()); }

static const char* environ_lookup(const char* name, void*) { return env_get(name); }

Status parse_config_from_environ(Config* out) noexcept { return parse_config(environ_lookup, nullptr, out); }

bool find_unknown_variable(char* warning, size_t cap) noexcept {
  bool found = false;
  env_for_each_with_prefix("SENTINEL_", [&](const char* entry) {
    if (found) return;
    for (const char* prefix : kForeignPrefixes)
      if (starts_with(entry, prefix)) return;
    for (const Entry& known : kEntries) {
      const char* k = known.var.name;
      const char* e = entry;
      while (*k != '\0' && *e == *k) {
        ++k;
        ++e;
      }
      if (*k == '\0' && *e == '=') return;
    }
    TextBuf msg(warning, cap);
    msg.put("sentinel: unknown variable ignored: ");
    for (const char* e = entry; *e != '\0' && *e != '='; ++e) put_byte_escaped(msg, *e);
    msg.put(" (`sentinel run --help` lists the known variables)");
    found = true;
  });
  return found;
}

}  // namespace sentinel
