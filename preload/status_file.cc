#include "status_file.h"

#include <cstdio>
#include <cstring>

#include "core/live_status.h"
#include "manager.h"
#include "migration.h"
#include "profiler.h"
#include "runtime_state.h"
#include "sentinel/sentinel.h"

namespace sentinel::rt {
namespace {

constexpr uint64_t kPeriodNs = 200'000'000;

LiveStatusWriter g_writer;
bool g_opened = false;
uint64_t g_last_ns = 0;
LiveStatus g_last;
const char* g_stage_override = nullptr;

void set(char* dst, size_t cap, const char* src) { std::snprintf(dst, cap, "%s", src); }

// Where the run is, in the words of the status line.
const char* stage_of(Mode mode, uint64_t steps, const std::string& profiler_state, const std::string& manager_stage) {
  if (mode == Mode::kPassthrough) return "pass-through";
  if (mode == Mode::kManaged) {
    if (manager_stage == "managed") return "managed";
    if (manager_stage == "matching-profile") return "matching profile";
  }
  if (mode == Mode::kProfile || mode == Mode::kManaged) {
    if (profiler_state == "profiling" || profiler_state == "finishing") return "profiling";
    if (profiler_state == "done") return mode == Mode::kProfile ? "profiled" : "planning";
    return steps == 0 ? "detecting steps" : "warm-up";
  }
  return steps == 0 ? "detecting steps" : "tracking";
}

bool ready() noexcept {
  if (!g_opened) {
    g_opened = true;
    if (g_state.config.status_path[0] != '\0') g_writer.open(g_state.config.status_path);
  }
  return g_writer.is_open();
}

}  // namespace

void status_publish(bool now) noexcept {
  if (!ready()) return;
  const uint64_t t = now_ns();
  if (!now && t - g_last_ns < kPeriodNs) return;
  g_last_ns = t;
  try {
    const Mode mode = g_state.config.mode;
    LiveStatus s;
    sentinel_counters c{};
    sentinel_get_counters(&c);
    s.steps = c.steps_detected;
    s.current_step = c.current_step;
    const place::PlacerStats p = g_state.placer.stats();
    s.dram_bytes = p.enabled ? p.fast_live_bytes + p.fast_parked_bytes : c.live_bytes;
    s.budget_bytes = p.budget_bytes == ~uint64_t{0} ? 0 : p.budget_bytes;
    const MigrationReport mig = migration_report();
    s.migrations = mig.engine.moves_done;
    s.migrated_bytes = mig.engine.bytes_to_slow + mig.engine.bytes_to_fast;
    std::string profiler_state, manager_stage;
    if (mode == Mode::kProfile || mode == Mode::kManaged) profiler_state = profiler_report().state;
    if (mode == Mode::kManaged) {
      const ManagerReport m = manager_report();
      manager_stage = m.stage;
      s.managed_steps = m.executor.managed_steps;
      s.late_prefetches = m.executor.late_prefetches;
    }
    set(s.mode, sizeof s.mode, mode_name(mode));
    set(s.stage, sizeof s.stage,
        g_stage_override != nullptr ? g_stage_override : stage_of(mode, s.steps, profiler_state, manager_stage));
    g_last = s;
    g_writer.publish(s);
  } catch (...) {
    // Out of memory on the service thread: the line shows the last status.
  }
}

void status_stage_begin(const char* stage) noexcept {
  g_stage_override = stage;
  if (!ready()) return;
  set(g_last.mode, sizeof g_last.mode, mode_name(g_state.config.mode));
  set(g_last.stage, sizeof g_last.stage, stage);
  g_writer.publish(g_last);
}

void status_stage_done() noexcept { g_stage_override = nullptr; }

}  // namespace sentinel::rt
