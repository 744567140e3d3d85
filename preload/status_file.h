// The live status file (SENTINEL_STATUS, core/live_status.h): what `sentinel run` shows on its status line
// (mode and stage, steps, DRAM in use against the budget, migrations), published from the service thread.
// The counters are the ones sentinel_get_counters() (include/sentinel/sentinel.h, Python's
// sentinel.stats()) returns, plus placement, migration and managed-mode figures.
//
// Thread safety: service thread only (and the exit handler after the service thread's last pass).
#pragma once

namespace sentinel::rt {

// Publishes the status when SENTINEL_STATUS is set, at most every 200 ms unless `now`. Takes the
// profiler's and manager's report locks: never call it from inside their event handling.
void status_publish(bool now) noexcept;

// The manager's stage while it does something long on the service thread ("planning"): published at
// once with the last counters (no lock taken), and kept until status_stage_done().
void status_stage_begin(const char* stage) noexcept;
void status_stage_done() noexcept;

}  // namespace sentinel::rt
