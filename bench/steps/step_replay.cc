// Replays a recorded allocation-event trace (SENTINEL_TRACE) through a StepDetector and prints, as one
// line of key=value pairs: events, complete steps, period, switches (relocks), the step during which
// the detector first locked and during which it took the structure it kept (both 1-based: "locked in
// step 2" means after one complete step and part of the next), and the wall time of observe() per call
// (mean and maximum; the maximum includes the rare locking call).
//
// Usage: sentinel_step_replay TRACE
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "core/step_detector.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  auto d = std::make_unique<sentinel::StepDetector>();
  std::string line;
  uint64_t events = 0, total_ns = 0, max_ns = 0;
  int64_t first_lock_step = -1, final_lock_step = -1;
  uint64_t relocks = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    uint64_t site, bytes, size;
    uint32_t objects;
    fields >> std::hex >> site >> std::dec >> objects >> bytes >> size;
    if (!fields) {
      std::fprintf(stderr, "bad line: %s\n", line.c_str());
      return 1;
    }
    const bool was_locked = d->locked();
    const auto t0 = std::chrono::steady_clock::now();
    d->observe(site, objects, bytes, size);
    const auto ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    total_ns += ns;
    if (ns > max_ns) max_ns = ns;
    ++events;
    if (!was_locked && d->locked()) first_lock_step = d->step_index() + 1;
    if ((!was_locked && d->locked()) || d->relocks() != relocks) final_lock_step = d->step_index() + 1;
    relocks = d->relocks();
  }
  d->finish();
  std::printf("events=%llu steps=%llu period=%u relocks=%llu first_lock_step=%lld final_lock_step=%lld "
              "observe_mean_ns=%.0f observe_max_ns=%llu\n",
              static_cast<unsigned long long>(events), static_cast<unsigned long long>(d->complete_steps()),
              d->period(), static_cast<unsigned long long>(d->relocks()), static_cast<long long>(first_lock_step),
              static_cast<long long>(final_lock_step), events ? static_cast<double>(total_ns) / events : 0.0,
              static_cast<unsigned long long>(max_ns));
  return 0;
}
