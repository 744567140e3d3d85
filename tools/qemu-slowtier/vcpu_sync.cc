#include "vcpu_sync.h"

namespace sentinel::slowtier {

double slowest_busy_other(const double* clocks, const bool* idle, size_t n, size_t self) {
  double slowest = kNoBusyVcpu;
  for (size_t i = 0; i < n; ++i) {
    if (i != self && !idle[i] && clocks[i] < slowest) slowest = clocks[i];
  }
  return slowest;
}

}  // namespace sentinel::slowtier
