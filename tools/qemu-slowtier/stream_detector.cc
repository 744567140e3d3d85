#include "stream_detector.h"

namespace sentinel::slowtier {

StreamDetector::StreamDetector(const StreamParams& p) : params_(p), trackers_(p.trackers) {}

bool StreamDetector::on_miss(uint64_t line) {
  if (trackers_.empty()) return false;  // the model is off: every miss pays its latency
  ++clock_;
  const uint64_t page = line / kLinesPerPage;
  Tracker* victim = &trackers_[0];
  for (Tracker& t : trackers_) {
    if (t.misses == 0 || t.last / kLinesPerPage != page) {
      if (t.misses == 0 || t.used < victim->used) victim = &t;
      continue;
    }
    const int64_t step = static_cast<int64_t>(line - t.last);
    const int64_t ahead = t.direction == 0 ? (step < 0 ? -step : step) : step * t.direction;
    if (ahead < 1 || ahead > static_cast<int64_t>(params_.window)) {
      if (t.used < victim->used) victim = &t;
      continue;
    }
    if (t.direction == 0) t.direction = step > 0 ? 1 : -1;
    t.last = line;
    t.used = clock_;
    ++t.misses;
    return t.misses > params_.train;
  }
  *victim = Tracker{line, 0, 1, clock_};
  return params_.train == 0;
}

}  // namespace sentinel::slowtier
