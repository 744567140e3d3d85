#include "stats_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/text_buf.h"
#include "migration.h"
#include "profiler.h"
#include "runtime_state.h"

namespace sentinel::rt {

bool write_stats_json(const char* path) noexcept {
  const State& s = g_state;
  const Counters& c = s.counters;
  const HeapStats heap = s.heap.reserved_bytes() != 0 ? s.heap.stats() : HeapStats{};
  const StepDetector& d = s.detector;
  const double seconds = static_cast<double>(now_ns() - s.start_ns) / 1e9;

  auto json_escape = [](const std::string& in) {
    std::string out;
    for (char ch : in) {
      if (ch == '"' || ch == '\\') out.push_back('\\');
      if (static_cast<unsigned char>(ch) >= 0x20) out.push_back(ch);
    }
    return out;
  };
  const ProfilerReport prof = s.config.mode == Mode::kProfile ? profiler_report() : ProfilerReport{};
  std::string sampler_json = "  \"sampler\": \"" + (prof.sampler.empty() ? std::string("none") : prof.sampler) +
                             "\",\n  \"samples\": " + std::to_string(prof.samples) + ",\n";
  if (s.config.mode == Mode::kProfile) {
    sampler_json += "  \"sampler_reason\": \"" + json_escape(prof.sampler_reason) + "\",\n  \"profile_state\": \"" + prof.state +
                    "\",\n  \"profiled_steps\": " + std::to_string(prof.profiled_steps) +
                    ",\n  \"profiles_written\": " + std::to_string(prof.profiles_written) +
                    ",\n  \"profile_restarts\": " + std::to_string(prof.profile_restarts) +
                    ",\n  \"object_events_dropped\": " + std::to_string(prof.events_dropped) + ",\n";
  }

  const MigrationReport mig = migration_report();
  const std::string migration_json =
      ",\n  \"migration_enabled\": " + std::string(mig.enabled ? "true" : "false") +
      ",\n  \"migrations_done\": " + std::to_string(mig.engine.moves_done) +
      ",\n  \"migrations_failed\": " + std::to_string(mig.engine.moves_failed) +
      ",\n  \"migrations_refused_budget\": " + std::to_string(mig.refused_budget) +
      ",\n  \"migrations_cancelled\": " +
      std::to_string(mig.engine.cancelled_queued + mig.engine.cancelled_running) +
      ",\n  \"migration_queue_full\": " + std::to_string(mig.engine.queue_full) +
      ",\n  \"objects_to_slow\": " + std::to_string(mig.engine.objects_to_slow) +
      ",\n  \"bytes_to_slow\": " + std::to_string(mig.engine.bytes_to_slow) +
      ",\n  \"objects_to_fast\": " + std::to_string(mig.engine.objects_to_fast) +
      ",\n  \"bytes_to_fast\": " + std::to_string(mig.engine.bytes_to_fast) +
      ",\n  \"migration_pages_busy\": " + std::to_string(mig.engine.pages_busy) +
      ",\n  \"migration_pages_nomem\": " + std::to_string(mig.engine.pages_nomem) +
      ",\n  \"migration_rollbacks\": " + std::to_string(mig.engine.rollbacks) +
      ",\n  \"migration_seconds\": " + std::to_string(static_cast<double>(mig.engine.move_ns) / 1e9) +
      ",\n  \"frees_during_migration\": " + std::to_string(mig.deferred_frees) +
      ",\n  \"fast_node\": " + std::to_string(s.placer.enabled() ? s.placer.fast_node() : -1) +
      ",\n  \"slow_node\": " + std::to_string(s.placer.enabled() ? s.placer.slow_node() : -1) +
      ",\n  \"topology\": \"" + json_escape(s.topology) + "\"\n";

  char buf[8192];
  const int n = std::snprintf(
      buf, sizeof buf,
      "{\n"
      "  \"version\": 1,\n"
      "  \"mode\": \"%s\",\n"
      "%s"
      "  \"pid\": %d,\n"
      "  \"runtime_seconds\": %.3f,\n"
      "  \"min_object_bytes\": %llu,\n"
      "  \"steps_detected\": %llu,\n"
      "  \"step_detection\": \"%s\",\n"
      "  \"step_period_events\": %u,\n"
      "  \"step_redetections\": %llu,\n"
      "  \"objects_per_step\": %u,\n"
      "  \"bytes_per_step\": %llu,\n"
      "  \"objects_tracked\": %llu,\n"
      "  \"bytes_tracked\": %llu,\n"
      "  \"objects_freed\": %llu,\n"
      "  \"live_objects_at_exit\": %llu,\n"
      "  \"live_bytes_at_exit\": %llu,\n"
      "  \"peak_object_bytes\": %llu,\n"
      "  \"allocation_events\": %llu,\n"
      "  \"inplace_reallocs\": %llu,\n"
      "  \"invalid_frees\": %llu,\n"
      "  \"heap_full_fallbacks\": %llu,\n"
      "  \"extents_carved\": %llu,\n"
      "  \"extents_reused\": %llu,\n"
      "  \"extents_trimmed\": %llu,\n"
      "  \"extent_bytes_carved\": %llu,\n"
      "  \"reserved_bytes\": %llu,\n"
      "  \"call_site_cache_misses\": %llu,\n"
      "  \"dropped_log_messages\": %llu,\n"
      "  \"fast_budget_bytes\": %llu,\n"
      "  \"peak_fast_bytes\": %llu,\n"
      "  \"peak_slow_bytes\": %llu,\n"
      "  \"forced_slow_allocations\": %llu,\n"
      "  \"bind_failures\": %llu"
      "%s"
      "}\n",
      mode_name(s.config.mode), sampler_json.c_str(), static_cast<int>(s.init_pid), seconds,
      static_cast<unsigned long long>(s.config.min_object),
      static_cast<unsigned long long>(d.complete_steps()),
      d.explicit_marks() ? "marked" : (d.locked() ? "automatic" : "none"), d.period(),
      static_cast<unsigned long long>(d.relocks()), d.last_step_objects(),
      static_cast<unsigned long long>(d.last_step_bytes()),
      static_cast<unsigned long long>(c.objects_tracked.load()),
      static_cast<unsigned long long>(c.bytes_tracked.load()),
      static_cast<unsigned long long>(c.objects_freed.load()),
      static_cast<unsigned long long>(c.live_objects.load()),
      static_cast<unsigned long long>(c.live_bytes.load()),
      static_cast<unsigned long long>(c.peak_live_bytes.load()),
      static_cast<unsigned long long>(d.events_seen()),
      static_cast<unsigned long long>(c.inplace_reallocs.load()),
      static_cast<unsigned long long>(c.invalid_frees.load()),
      static_cast<unsigned long long>(c.heap_full_fallbacks.load()),
      static_cast<unsigned long long>(heap.extents_carved),
      static_cast<unsigned long long>(heap.extents_reused),
      static_cast<unsigned long long>(heap.extents_trimmed),
      static_cast<unsigned long long>(heap.carved_bytes),
      static_cast<unsigned long long>(s.heap.reserved_bytes()),
      static_cast<unsigned long long>(s.sites.cache_misses()),
      static_cast<unsigned long long>(s.log.dropped()),
      static_cast<unsigned long long>(s.placer.stats().budget_bytes),
      static_cast<unsigned long long>(s.placer.stats().peak_fast_bytes),
      static_cast<unsigned long long>(s.placer.stats().peak_slow_bytes),
      static_cast<unsigned long long>(s.placer.stats().forced_slow_allocations),
      static_cast<unsigned long long>(s.placer.stats().bind_failures), migration_json.c_str());
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return false;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  write_all(fd, buf, static_cast<size_t>(n));
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
