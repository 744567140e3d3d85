// How long free() waits in SoftwareSampler::release() while another thread re-arms every window.
//
// One thread arms N objects over and over (as the profiler's service thread does at each phase
// boundary); another calls release() on the objects in turn (as free() does), and the latency of each
// release is recorded. Two modes run side by side in one process:
//   serialized  release() and arm() both hold one std::mutex, as the sampler did before: a free that
//               arrives during arm() waits for the whole pass (emulated here with an outer mutex).
//   lock-free   the sampler as it is: release() restores its own window only.
// Printed: arm() pass time, release latency percentiles, how many releases waited more than half an
// arm pass, and p99.9 release / median arm pass. The maximum also catches preemption of either thread
// on a busy machine, so it is shown but not used for the ratio.
//
//   sentinel_bench_release [objects=4096] [passes=200]
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "sampler/software_sampler.h"

using Clock = std::chrono::steady_clock;

namespace {

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct Result {
  double arm_median_us = 0;
  double release_p50_us = 0, release_p99_us = 0, release_p999_us = 0, release_max_us = 0;
  size_t releases = 0;
  size_t long_waits = 0;  // releases that took more than half a median arm pass
};

double percentile(std::vector<float>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

Result run(bool serialized, const std::vector<sentinel::SampleRegion>& regions, int passes) {
  sentinel::SoftwareSamplerOptions opt;
  opt.max_slots = static_cast<uint32_t>(regions.size());
  opt.max_phases = 1;
  opt.max_windows = static_cast<uint32_t>(regions.size());
  sentinel::SoftwareSampler sampler;
  if (!sampler.start(opt, nullptr)) std::abort();
  std::mutex outer;  // serialized mode only
  std::atomic<bool> done{false};
  std::vector<float> release_us;
  release_us.reserve(size_t{8} << 20);
  std::thread freer([&] {
    uint32_t slot = 0;
    while (!done.load(std::memory_order_relaxed)) {
      const auto t0 = Clock::now();
      if (serialized) {
        std::lock_guard<std::mutex> lock(outer);
        sampler.release(slot);
      } else {
        sampler.release(slot);
      }
      release_us.push_back(us(Clock::now() - t0));
      slot = (slot + 1) % opt.max_slots;
      if (release_us.size() == release_us.capacity()) break;
    }
  });
  std::vector<float> arm_us;
  for (int i = 0; i < passes; ++i) {
    const auto t0 = Clock::now();
    if (serialized) {
      std::lock_guard<std::mutex> lock(outer);
      sampler.arm(regions, 0);
    } else {
      sampler.arm(regions, 0);
    }
    arm_us.push_back(us(Clock::now() - t0));
  }
  done = true;
  freer.join();
  sampler.stop();
  Result r;
  r.arm_median_us = percentile(arm_us, 0.5);
  r.releases = release_us.size();
  r.release_p50_us = percentile(release_us, 0.5);
  r.release_p99_us = percentile(release_us, 0.99);
  r.release_p999_us = percentile(release_us, 0.999);
  r.release_max_us = *std::max_element(release_us.begin(), release_us.end());
  for (float v : release_us) r.long_waits += v > r.arm_median_us / 2;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t objects = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 4096;
  const int passes = argc > 2 ? std::atoi(argv[2]) : 200;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t object_bytes = 4 * page;
  void* base = mmap(nullptr, objects * object_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return 1;
  std::vector<sentinel::SampleRegion> regions;
  for (size_t i = 0; i < objects; ++i) {
    regions.push_back({reinterpret_cast<uintptr_t>(base) + i * object_bytes, object_bytes, static_cast<uint32_t>(i)});
  }
  std::printf("release() from a freeing thread while another thread arms %zu objects, %d passes\n", objects, passes);
  std::printf("%-11s %11s %8s %8s %9s %11s %9s %14s %14s\n", "mode", "arm pass us", "rel p50", "rel p99",
              "rel p99.9", "rel max us", "releases", "> half a pass", "p99.9 / pass");
  for (bool serialized : {true, false}) {
    const Result r = run(serialized, regions, passes);
    std::printf("%-11s %11.0f %8.2f %8.2f %9.1f %11.1f %9zu %14zu %14.4f\n", serialized ? "serialized" : "lock-free",
                r.arm_median_us, r.release_p50_us, r.release_p99_us, r.release_p999_us, r.release_max_us,
                r.releases, r.long_waits, r.release_p999_us / r.arm_median_us);
  }
  munmap(base, objects * object_bytes);
  return 0;
}
