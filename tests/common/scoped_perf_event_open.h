// For tests: perf_event_open replaced in os/os.h's table for the lifetime of an object, every other call
// going to the table that was active before. This is how tests make the PMU sampler's kernel fail (or
// accept one event only) on any machine.
//
// Thread safety: as os::install(): construct and destroy it on the test's thread while no other thread is
// inside a Sentinel call; one at a time (the failing errno is one global).
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <atomic>
#include <cerrno>

#include "os/os.h"

namespace sentinel::testing {

class ScopedPerfEventOpen {
 public:
  using OpenFn = int (*)(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags);

  explicit ScopedPerfEventOpen(OpenFn open) : calls_(os::active()) {
    calls_.perf_event_open = open;
    previous_ = os::install(&calls_);
  }
  ~ScopedPerfEventOpen() { os::install(previous_); }
  ScopedPerfEventOpen(const ScopedPerfEventOpen&) = delete;
  ScopedPerfEventOpen& operator=(const ScopedPerfEventOpen&) = delete;

 private:
  os::Calls calls_;
  const os::Calls* previous_ = nullptr;
};

// perf_event_open fails with `err`, as the kernel does where the PMU or the permission is missing.
class FailingPerfEventOpen : public ScopedPerfEventOpen {
 public:
  explicit FailingPerfEventOpen(int err) : ScopedPerfEventOpen(fail) { failing_errno_.store(err); }

 private:
  static int fail(perf_event_attr*, pid_t, int, int, unsigned long) {
    errno = failing_errno_.load();
    return -1;
  }
  static inline std::atomic<int> failing_errno_{0};
};

}  // namespace sentinel::testing
