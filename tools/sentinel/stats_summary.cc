#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"

namespace sentinel::cli {
namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

}  // namespace

bool print_stats_summary(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "no statistics were written to " + path + " (did the program exit normally?)";
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "statistics file " + path + " is empty or not JSON (the program may have called _exit)";
    return false;
  }
  auto u = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t{0};
  };
  std::fprintf(stderr, "\n== Sentinel summary (%s mode, %.1f s) ==\n", j.value("mode", "?").c_str(),
               j.value("runtime_seconds", 0.0));
  std::fprintf(stderr, "  training steps detected   %llu (%s)\n",
               static_cast<unsigned long long>(u("steps_detected")), j.value("step_detection", "?").c_str());
  std::fprintf(stderr, "  step period               %llu object allocations\n",
               static_cast<unsigned long long>(u("step_period_events")));
  std::fprintf(stderr, "  objects per step          %llu (%s)\n",
               static_cast<unsigned long long>(u("objects_per_step")),
               human_bytes(static_cast<double>(u("bytes_per_step"))).c_str());
  std::fprintf(stderr, "  objects tracked           %llu (%s allocated in all)\n",
               static_cast<unsigned long long>(u("objects_tracked")),
               human_bytes(static_cast<double>(u("bytes_tracked"))).c_str());
  std::fprintf(stderr, "  peak bytes in objects     %s\n",
               human_bytes(static_cast<double>(u("peak_object_bytes"))).c_str());
  std::fprintf(stderr, "  extents carved / reused   %llu / %llu\n",
               static_cast<unsigned long long>(u("extents_carved")),
               static_cast<unsigned long long>(u("extents_reused")));
  if (u("invalid_frees") || u("heap_full_fallbacks")) {
    std::fprintf(stderr, "  invalid frees ignored     %llu\n  heap-full fallbacks       %llu\n",
                 static_cast<unsigned long long>(u("invalid_frees")),
                 static_cast<unsigned long long>(u("heap_full_fallbacks")));
  }
  if (j.value("slow_node", -1) >= 0) {
    std::fprintf(stderr, "  nodes                     fast %d, slow %d\n", j.value("fast_node", -1), j.value("slow_node", -1));
    std::fprintf(stderr, "  fast budget               %s (peak fast %s, peak slow %s, %llu allocations forced slow)\n",
                 !j.contains("fast_budget_bytes") || j["fast_budget_bytes"].is_null()
                     ? "unlimited"
                     : human_bytes(static_cast<double>(u("fast_budget_bytes"))).c_str(),
                 human_bytes(static_cast<double>(u("peak_fast_bytes"))).c_str(),
                 human_bytes(static_cast<double>(u("peak_slow_bytes"))).c_str(),
                 static_cast<unsigned long long>(u("forced_slow_allocations")));
    std::fprintf(stderr, "  migrations                %llu done, %llu failed (%s to slow, %s to fast)\n",
                 static_cast<unsigned long long>(u("migrations_done")),
                 static_cast<unsigned long long>(u("migrations_failed")),
                 human_bytes(static_cast<double>(u("bytes_to_slow"))).c_str(),
                 human_bytes(static_cast<double>(u("bytes_to_fast"))).c_str());
  } else {
    std::fprintf(stderr, "  placement                 none: %s\n", j.value("topology", std::string("single node")).c_str());
  }
  if (j.value("mode", "") == "managed") {
    std::fprintf(stderr, "  managed mode              %s (%s plan), %llu managed steps, %llu fallback steps\n",
                 j.value("managed_stage", "?").c_str(), j.value("plan_source", "no").c_str(),
                 static_cast<unsigned long long>(u("managed_steps")),
                 static_cast<unsigned long long>(u("fallback_steps")));
    std::fprintf(stderr, "  plan fidelity             %.1f%% of planned-fast bytes on the fast node when used\n",
                 100.0 * j.value("plan_fidelity", 0.0));
    std::fprintf(stderr, "  migrated per step         %s (planned %s), %llu late prefetches, %llu replans\n",
                 human_bytes(j.value("bytes_migrated_per_step", 0.0)).c_str(),
                 human_bytes(static_cast<double>(u("planned_bytes_per_step"))).c_str(),
                 static_cast<unsigned long long>(u("late_prefetches")), static_cast<unsigned long long>(u("replans")));
    if (u("placement_checked_bytes") > 0) {
      std::fprintf(stderr, "  placement check           %.1f%% of checked bytes on their planned node (move_pages)\n",
                   100.0 * static_cast<double>(u("placement_matching_bytes")) /
                       static_cast<double>(u("placement_checked_bytes")));
    }
  }
  if (j.value("mode", "") == "profile" || j.value("mode", "") == "managed") {
    std::fprintf(stderr, "  sampler                   %s, %llu samples, profile %s\n", j.value("sampler", "?").c_str(),
                 static_cast<unsigned long long>(u("samples")), j.value("profile_state", "?").c_str());
  }
  std::fprintf(stderr, "  statistics file           %s\n", path.c_str());
  return true;
}

}  // namespace sentinel::cli
