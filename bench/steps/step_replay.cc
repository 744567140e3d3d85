// Replays a recorded allocation-event trace (SENTINEL_TRACE) through a StepDetector and prints, as one
// line of key=value pairs: events, complete steps, period, switches (relocks), the step during which
// the detector took the structure it kept to the end (1-based: "locked in step 3" means after two
// complete steps and part of the third), and the wall time of observe() per call (mean and maximum,
// the best of kRounds replays; the maximum is the rare call that locks or switches).
//
// Usage: sentinel_step_replay TRACE
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/step_detector.h"

constexpr int kRounds = 5;

namespace {

struct Event {
  uint64_t site, bytes, size;
  uint32_t objects;
  uint32_t small_before;  // 0 in traces recorded before the column existed
};

struct Replay {
  uint64_t steps = 0, relocks = 0, total_ns = 0, max_ns = 0;
  uint32_t period = 0;
  int64_t locked_in_step = -1;
};

Replay replay(const std::vector<Event>& events) {
  auto d = std::make_unique<sentinel::StepDetector>();
  Replay r;
  for (const Event& e : events) {
    const bool was_locked = d->locked();
    const uint64_t relocks = d->relocks();
    const auto t0 = std::chrono::steady_clock::now();
    d->observe(e.site, e.objects, e.bytes, e.size, e.small_before);
    const auto ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    r.total_ns += ns;
    r.max_ns = std::max(r.max_ns, ns);
    // The step in progress when the structure kept to the end was taken, counting from 1.
    if ((!was_locked && d->locked()) || d->relocks() != relocks) r.locked_in_step = d->step_index() + 1;
  }
  d->finish();
  r.steps = d->complete_steps();
  r.relocks = d->relocks();
  r.period = d->period();
  return r;
}

}  // namespace

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
  std::vector<Event> events;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Event e{};
    fields >> std::hex >> e.site >> std::dec >> e.objects >> e.bytes >> e.size;
    if (fields && !(fields >> e.small_before)) {
      e.small_before = 0;
      fields.clear();
    }
    if (!fields) {
      std::fprintf(stderr, "bad line: %s\n", line.c_str());
      return 1;
    }
    events.push_back(e);
  }
  // Timing on a shared machine: the best of several replays (preemption only ever adds time).
  Replay best = replay(events);
  for (int round = 1; round < kRounds; ++round) {
    const Replay r = replay(events);
    best.total_ns = std::min(best.total_ns, r.total_ns);
    best.max_ns = std::min(best.max_ns, r.max_ns);
  }
  std::printf("events=%zu steps=%llu period=%u relocks=%llu locked_in_step=%lld observe_mean_ns=%.0f "
              "observe_max_ns=%llu\n",
              events.size(), static_cast<unsigned long long>(best.steps), best.period,
              static_cast<unsigned long long>(best.relocks), static_cast<long long>(best.locked_in_step),
              events.empty() ? 0.0 : static_cast<double>(best.total_ns) / static_cast<double>(events.size()),
              static_cast<unsigned long long>(best.max_ns));
  return 0;
}
