#include "os/measure_clock.h"

#include <sched.h>
#include <time.h>

#include <atomic>

#include "os/slowtier_mailbox.h"

namespace sentinel::os {
namespace {

// One mailbox page per CPU (the guest has at most SENTINEL_SLOWTIER_MAX_VCPUS): a thread preempted
// between its request and the answer may find another thread's answer in the page, which read_with_page
// detects (another request number) and retries.
constexpr int kPages = SENTINEL_SLOWTIER_MAX_VCPUS;
alignas(4096) unsigned char g_pages[kPages][slowtier::kMailboxPageBytes];

std::atomic<bool> g_emulator{false};

uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool emulator_ns(uint64_t* out) noexcept {
  const int cpu = sched_getcpu();
  sentinel_slowtier_counters c;
  if (!slowtier::read_with_page(g_pages[cpu >= 0 ? cpu % kPages : 0], &c, 8)) return false;
  *out = c.virtual_ns;
  return true;
}

}  // namespace

uint64_t measure_ns() noexcept {
  if (g_emulator.load(std::memory_order_relaxed)) {
    // Monotonic per thread even if an answer is ever missing: never earlier than the last reading.
    static thread_local uint64_t t_last __attribute__((tls_model("initial-exec"))) = 0;
    uint64_t ns;
    if (emulator_ns(&ns) && ns > t_last) t_last = ns;
    return t_last;
  }
  return monotonic_ns();
}

bool use_emulator_clock() noexcept {
  uint64_t ns;
  for (int i = 0; i < kPages; ++i) g_pages[i][0] = 0;  // resident before any allocation path uses them
  if (!emulator_ns(&ns)) return false;
  g_emulator.store(true, std::memory_order_relaxed);
  return true;
}

MeasureClock measure_clock() noexcept {
  return g_emulator.load(std::memory_order_relaxed) ? MeasureClock::kEmulator : MeasureClock::kMonotonic;
}

const char* measure_clock_name(MeasureClock c) noexcept {
  return c == MeasureClock::kEmulator ? "emulator" : "monotonic";
}

}  // namespace sentinel::os
