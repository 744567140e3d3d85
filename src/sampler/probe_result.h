// The outcome of trying to start (or probe) a sampler: shared by the perf_event path
// (pmu_sampler.h) and the emulated PMU (emulated_pmu.h).
//
// Thread safety: a plain value.
#pragma once

#include <string>

namespace sentinel {

struct ProbeResult {
  bool ok = false;
  int err = 0;         // errno that ruled the sampler out (0 when ok)
  std::string reason;  // human explanation, including the errno name
};

}  // namespace sentinel
