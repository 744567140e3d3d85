#include "stats_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "core/text_buf.h"
#include "manager.h"
#include "migration.h"
#include "profiler.h"
#include "runtime_state.h"

namespace sentinel::rt {
namespace {

using Json = nlohmann::ordered_json;

void add_run(Json& j, const State& s) {
  const Counters& c = s.counters;
  const HeapStats heap = s.heap.reserved_bytes() != 0 ? s.heap.stats() : HeapStats{};
  const StepDetector& d = s.detector;
  j["pid"] = static_cast<int>(s.init_pid);
  j["runtime_seconds"] = static_cast<double>(now_ns() - s.start_ns) / 1e9;
  j["min_object_bytes"] = s.config.min_object;
  j["steps_detected"] = d.complete_steps();
  j["last_step_index"] = d.step_index();
  j["step_detection"] = d.explicit_marks() ? "marked" : (d.locked() ? "automatic" : "none");
  j["step_period_events"] = d.period();
  j["step_redetections"] = d.relocks();
  j["objects_per_step"] = d.last_step_objects();
  j["bytes_per_step"] = d.last_step_bytes();
  j["objects_tracked"] = c.objects_tracked.load();
  j["bytes_tracked"] = c.bytes_tracked.load();
  j["objects_freed"] = c.objects_freed.load();
  j["live_objects_at_exit"] = c.live_objects.load();
  j["live_bytes_at_exit"] = c.live_bytes.load();
  j["peak_object_bytes"] = c.peak_live_bytes.load();
  j["allocation_events"] = d.events_seen();
  j["inplace_reallocs"] = c.inplace_reallocs.load();
  j["invalid_frees"] = c.invalid_frees.load();
  j["heap_full_fallbacks"] = c.heap_full_fallbacks.load();
  j["extents_carved"] = heap.extents_carved;
  j["extents_reused"] = heap.extents_reused;
  j["extents_trimmed"] = heap.extents_trimmed;
  j["extent_bytes_carved"] = heap.carved_bytes;
  j["reserved_bytes"] = s.heap.reserved_bytes();
  j["call_site_cache_misses"] = s.sites.cache_misses();
  j["dropped_log_messages"] = s.log.dropped();
}

void add_profiler(Json& j) {
  const ProfilerReport prof = profiler_report();
  j["sampler"] = prof.sampler.empty() ? std::string("none") : prof.sampler;
  j["samples"] = prof.samples;
  j["sampler_reason"] = prof.sampler_reason;
  j["profile_state"] = prof.state;
  j["profiled_steps"] = prof.profiled_steps;
  j["profiles_written"] = prof.profiles_written;
  j["profile_restarts"] = prof.profile_restarts;
  j["object_events_dropped"] = prof.events_dropped;
}

void add_placement(Json& j, const State& s) {
  const place::PlacerStats p = s.placer.stats();
  // No budget (unlimited, or a single node) is null, not a huge number.
  j["fast_budget_bytes"] = p.budget_bytes == ~uint64_t{0} ? Json(nullptr) : Json(p.budget_bytes);
  j["peak_fast_bytes"] = p.peak_fast_bytes;
  j["peak_slow_bytes"] = p.peak_slow_bytes;
  j["forced_slow_allocations"] = p.forced_slow_allocations;
  j["planned_slow_allocations"] = p.planned_slow_allocations;
  j["bind_failures"] = p.bind_failures;
  const MigrationReport mig = migration_report();
  j["migration_enabled"] = mig.enabled;
  j["migrations_done"] = mig.engine.moves_done;
  j["migrations_failed"] = mig.engine.moves_failed;
  j["migrations_refused_budget"] = mig.refused_budget;
  j["migrations_cancelled"] = mig.engine.cancelled_queued + mig.engine.cancelled_running;
  j["migration_queue_full"] = mig.engine.queue_full;
  j["objects_to_slow"] = mig.engine.objects_to_slow;
  j["bytes_to_slow"] = mig.engine.bytes_to_slow;
  j["objects_to_fast"] = mig.engine.objects_to_fast;
  j["bytes_to_fast"] = mig.engine.bytes_to_fast;
  j["migration_pages_busy"] = mig.engine.pages_busy;
  j["migration_pages_nomem"] = mig.engine.pages_nomem;
  j["migration_rollbacks"] = mig.engine.rollbacks;
  j["migration_seconds"] = static_cast<double>(mig.engine.move_ns) / 1e9;
  j["frees_during_migration"] = mig.deferred_frees;
  j["partial_moves_counted_fast"] = mig.partial_moves_counted_fast;
  j["fast_node"] = s.placer.enabled() ? s.placer.fast_node() : -1;
  j["slow_node"] = s.placer.enabled() ? s.placer.slow_node() : -1;
  j["topology"] = std::string(s.topology);
}

void add_managed(Json& j, const State& s) {
  const ManagerReport m = manager_report();
  j["managed_stage"] = m.stage;
  j["plan_source"] = m.plan_source;
  j["first_managed_step"] = m.first_managed_step;
  const manage::ExecutorStats& x = m.executor;
  j["managed_steps"] = x.managed_steps;
  j["fallback_steps"] = x.fallback_steps;
  j["plan_deviations"] = s.counters.plan_deviations.load();
  j["planned_fast_forced_slow"] = s.counters.planned_fast_forced_slow.load();
  j["migration_bw_planned_gbps"] = m.migration_bw_gbps;
  j["plan_fidelity"] = x.fidelity();
  j["late_prefetches"] = x.late_prefetches;
  j["replans"] = m.replans;
  j["plans"] = m.plans;
  j["reprofiles"] = m.reprofiles;
  j["plan_budget_bytes"] = m.plan_budget_bytes;
  j["plan_modeled_step_ns"] = m.plan_modeled_step_ns;
  j["planned_bytes_per_step"] = m.planned_bytes_per_step;
  j["bytes_migrated_per_step"] =
      x.managed_steps == 0 ? 0.0 : static_cast<double>(x.bytes_migrated) / static_cast<double>(x.managed_steps);
  j["managed_bytes_migrated"] = x.bytes_migrated;
  j["managed_moves_issued"] = x.moves_issued;
  j["managed_moves_done"] = x.moves_done;
  j["managed_moves_failed"] = x.moves_failed;
  j["managed_moves_deferred"] = x.moves_deferred;
  j["managed_moves_dropped"] = x.moves_dropped;
  j["managed_reconcile_moves"] = x.reconcile_moves;
  j["move_completions_dropped"] = m.completions_dropped;
  j["placement_checked_bytes"] = m.placement_checked_bytes;
  j["placement_matching_bytes"] = m.placement_matching_bytes;
}

}  // namespace

bool write_stats_json(const char* path) noexcept {
  std::string text;
  try {
    const State& s = g_state;
    Json j;
    j["version"] = 1;
    j["mode"] = mode_name(s.config.mode);
    add_run(j, s);
    if (s.config.mode == Mode::kProfile || s.config.mode == Mode::kManaged) add_profiler(j);
    add_placement(j, s);
    if (s.config.mode == Mode::kManaged) add_managed(j, s);
    text = j.dump(2) + "\n";
  } catch (...) {
    return false;
  }
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  write_all(fd, text.data(), text.size());
  return ::close(fd) == 0;
}

bool write_event_trace(const char* path) noexcept {
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr) return false;
  std::fprintf(f, "# sentinel allocation-event trace: site live_objects live_bytes size\n");
  g_state.detector.for_each_event([f](uint64_t site, uint32_t objects, uint64_t bytes, uint64_t size) {
    std::fprintf(f, "%016llx %u %llu %llu\n", static_cast<unsigned long long>(site), objects,
                 static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(size));
  });
  return std::fclose(f) == 0;
}

}  // namespace sentinel::rt
