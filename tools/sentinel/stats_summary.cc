// `sentinel run`'s summary of a stats file, read with nlohmann::json by the keys of core/stats_keys.h.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/human_bytes.h"
#include "core/stats_keys.h"

namespace sentinel::cli {

namespace key = stats_key;

std::string human_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 1 ? "%.1f ms" : "%.2f s", s < 1 ? s * 1e3 : s);
  return buf;
}

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
  auto u = [&](const char* name) {
    auto it = j.find(name);
    return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t{0};
  };
  std::fprintf(stderr, "\n== Sentinel summary (%s mode, %.1f s) ==\n", j.value(key::kMode, "?").c_str(),
               j.value(key::kRuntimeSeconds, 0.0));
  std::fprintf(stderr, "  training steps detected   %llu (%s)\n",
               static_cast<unsigned long long>(u(key::kStepsDetected)), j.value(key::kStepDetection, "?").c_str());
  std::fprintf(stderr, "  step period               %llu object allocations\n",
               static_cast<unsigned long long>(u(key::kStepPeriodEvents)));
  std::fprintf(stderr, "  objects per step          %llu (%s)\n",
               static_cast<unsigned long long>(u(key::kObjectsPerStep)),
               human_bytes(static_cast<double>(u(key::kBytesPerStep))).c_str());
  std::fprintf(stderr, "  objects tracked           %llu (%s allocated in all)\n",
               static_cast<unsigned long long>(u(key::kObjectsTracked)),
               human_bytes(static_cast<double>(u(key::kBytesTracked))).c_str());
  std::fprintf(stderr, "  peak bytes in objects     %s\n",
               human_bytes(static_cast<double>(u(key::kPeakObjectBytes))).c_str());
  std::fprintf(stderr, "  extents carved / reused   %llu / %llu\n",
               static_cast<unsigned long long>(u(key::kExtentsCarved)),
               static_cast<unsigned long long>(u(key::kExtentsReused)));
  if (u(key::kInvalidFrees) || u(key::kHeapFullFallbacks)) {
    std::fprintf(stderr, "  invalid frees ignored     %llu\n  heap-full fallbacks       %llu\n",
                 static_cast<unsigned long long>(u(key::kInvalidFrees)),
                 static_cast<unsigned long long>(u(key::kHeapFullFallbacks)));
  }
  if (j.value(key::kDryRun, false)) {
    std::fprintf(stderr, "  DRY RUN                   slow node %d simulated: binds and moves booked (%s of channel time "
                 "modeled), the kernel's placement untouched; step times are this machine's own, not a tiered machine's\n",
                 j.value(key::kSlowNode, -1), human_seconds(j.value(key::kDryRunChannelSeconds, 0.0)).c_str());
    if (u(key::kKeptBirthBytes) > 0) {
      std::fprintf(stderr, "  DRY RUN, faults booked    %s of births took pages the budget had returned or another "
                   "pool held (kept, not faulted in again: a tiered machine faults them in)\n",
                   human_bytes(static_cast<double>(u(key::kKeptBirthBytes))).c_str());
    }
  }
  if (j.value(key::kSlowNode, -1) >= 0) {
    std::fprintf(stderr, "  nodes                     fast %d, slow %d\n", j.value(key::kFastNode, -1), j.value(key::kSlowNode, -1));
    std::fprintf(stderr, "  fast budget               %s (peak fast %s, peak slow %s, %llu allocations forced slow)\n",
                 !j.contains(key::kFastBudgetBytes) || j[key::kFastBudgetBytes].is_null()
                     ? "unlimited"
                     : human_bytes(static_cast<double>(u(key::kFastBudgetBytes))).c_str(),
                 human_bytes(static_cast<double>(u(key::kPeakFastBytes))).c_str(),
                 human_bytes(static_cast<double>(u(key::kPeakSlowBytes))).c_str(),
                 static_cast<unsigned long long>(u(key::kForcedSlowAllocations)));
    std::fprintf(stderr, "  migrations                %llu done, %llu failed (%s to slow, %s to fast)\n",
                 static_cast<unsigned long long>(u(key::kMigrationsDone)),
                 static_cast<unsigned long long>(u(key::kMigrationsFailed)),
                 human_bytes(static_cast<double>(u(key::kBytesToSlow))).c_str(),
                 human_bytes(static_cast<double>(u(key::kBytesToFast))).c_str());
  } else {
    std::fprintf(stderr, "  placement                 none: %s\n", j.value(key::kTopology, std::string("single node")).c_str());
  }
  if (j.value(key::kMode, "") == "managed") {
    std::fprintf(stderr, "  managed mode              %s (%s plan), %llu managed steps, %llu fallback steps\n",
                 j.value(key::kManagedStage, "?").c_str(), j.value(key::kPlanSource, "no").c_str(),
                 static_cast<unsigned long long>(u(key::kManagedSteps)),
                 static_cast<unsigned long long>(u(key::kFallbackSteps)));
    std::fprintf(stderr, "  plan fidelity             %.1f%% of planned-fast bytes on the fast node when used\n",
                 100.0 * j.value(key::kPlanFidelity, 0.0));
    std::fprintf(stderr, "  migrated per step         %s (planned %s), %llu late prefetches, %llu replans\n",
                 human_bytes(j.value(key::kBytesMigratedPerStep, 0.0)).c_str(),
                 human_bytes(static_cast<double>(u(key::kPlannedBytesPerStep))).c_str(),
                 static_cast<unsigned long long>(u(key::kLatePrefetches)), static_cast<unsigned long long>(u(key::kReplans)));
    if (u(key::kPlacementCheckedBytes) > 0) {
      std::fprintf(stderr, "  placement check           %.1f%% of checked bytes on their planned node (move_pages)\n",
                   100.0 * static_cast<double>(u(key::kPlacementMatchingBytes)) /
                       static_cast<double>(u(key::kPlacementCheckedBytes)));
    }
  }
  if (j.value(key::kMode, "") == "profile" || j.value(key::kMode, "") == "managed") {
    const auto source = j.find(key::kSamplerSource);
    const std::string from = source != j.end() && source->is_string() ? " from " + source->get<std::string>() : "";
    std::fprintf(stderr, "  sampler                   %s%s, %llu samples (%llu lost), profile %s\n",
                 j.value(key::kSampler, "?").c_str(), from.c_str(), static_cast<unsigned long long>(u(key::kSamples)),
                 static_cast<unsigned long long>(u(key::kSamplesLost)), j.value(key::kProfileState, "?").c_str());
  }
  std::fprintf(stderr, "  statistics file           %s\n", path.c_str());
  return true;
}

}  // namespace sentinel::cli
