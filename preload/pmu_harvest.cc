#include "pmu_harvest.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "logging.h"
#include "os/directory.h"
#include "runtime_state.h"

namespace sentinel::rt {
namespace {

std::vector<pid_t> process_threads() {
  std::vector<pid_t> tids;
  os::for_each_thread([&](pid_t tid) { tids.push_back(tid); });
  return tids;
}

// Consecutive samples mostly hit the same object in the same phase: summed here, handed to the
// builder once per run.
struct RunSum {
  bool open = false;
  uint64_t key = 0;
  uint32_t step = 0, phase = 0;
  uint64_t reads = 0, writes = 0, writebacks = 0;
  void flush(ProfileBuilder& b) {
    if (open) b.on_access(key, step, phase, reads, writes, writebacks);
    open = false;
    reads = writes = writebacks = 0;
  }
};

}  // namespace

void PmuHarvest::set_step_clock_mirror(uint64_t* word) {
  SpinGuard clock(g_state.clock_lock);
  if (word != nullptr) __atomic_store_n(word, 0, __ATOMIC_RELAXED);
  g_state.step_clock_mirror = word;
  g_state.pmu_window_first_step = g_state.pmu_window_end_step = -1;
}

int64_t PmuHarvest::open_window(uint32_t steps) {
  uint64_t* word = sampler_.step_clock();
  if (word == nullptr) return -1;
  SpinGuard clock(g_state.clock_lock);
  // The step after the one the program is in now: its first event has not happened yet, and it
  // cannot happen while this holds the clock's lock.
  const int64_t first = std::max<int64_t>(g_state.steps.clock().step_index(), 0) + 1;
  __atomic_store_n(word, 0, __ATOMIC_RELAXED);
  g_state.step_clock_mirror = word;
  g_state.pmu_window_first_step = first;
  g_state.pmu_window_end_step = first + steps;
  return first;
}

bool PmuHarvest::start(std::string* error) {
  // The emulated PMU samples the object reservation only: every object lives there, and nothing else
  // of the process (or of other processes, which do not share this range) is counted.
  options_.emulated_ranges = {emulated_pmu::AddressRange{g_state.heap.base(), g_state.heap.base() + g_state.heap.reserved_bytes()}};
  const Status r = sampler_.start(options_);
  if (!r.is_ok()) {
    *error = r.message();
    return false;
  }
  log_write(LogLevel::kInfo, ("PMU sampler started: " + sampler_.description()).c_str());
  started_ = true;
  threads_.clear();
  for (pid_t tid : process_threads()) threads_.insert(tid);  // start() covered these
  last_thread_scan_ns_ = now_ns();
  attribution_.clear();
  return true;
}

void PmuHarvest::stop() {
  if (!started_) return;
  // No allocation may write the word once the ring is unmapped.
  set_step_clock_mirror(nullptr);
  sampler_.stop();
  const RingStats ring = sampler_.stats();
  const EmulatedPmuCounts c = sampler_.emulated_counts();
  stats_.lost = ring.lost + c.stale_clock;
  if (options_.source == PmuSource::kEmulated) {
    log_write(LogLevel::kInfo,
              ("emulated PMU: " + std::to_string(c.events_in_ranges) + " misses and write-backs in the object range, " +
               std::to_string(c.samples_queued) + " samples queued, " + std::to_string(c.samples_dropped) +
               " dropped, " + std::to_string(c.stale_clock) + " without a step clock; ring: " +
               std::to_string(ring.samples) + " samples read, " + std::to_string(ring.lost) + " lost, " +
               std::to_string(ring.corrupt) + " corrupt; " + std::to_string(stats_.attributed) + " attributed, " +
               std::to_string(stats_.outside) + " outside objects (" + std::to_string(stats_.outside_before) +
               " before the first phase, " + std::to_string(stats_.outside_writebacks) + " write-backs)")
                  .c_str());
  }
  started_ = false;
  attribution_.clear();
}

void PmuHarvest::attach_new_threads(uint64_t now) {
  constexpr uint64_t kScanIntervalNs = 50'000'000;
  if (!started_ || options_.source == PmuSource::kEmulated || now - last_thread_scan_ns_ < kScanIntervalNs) return;
  last_thread_scan_ns_ = now;
  for (pid_t tid : process_threads()) {
    // A thread that exited since the listing fails with ESRCH, and one the kernel refuses is not sampled:
    // either way nothing else is to be done about it here (the ring of every other thread is open).
    if (threads_.insert(tid).second) static_cast<void>(sampler_.attach_thread(tid));
  }
}

void PmuHarvest::begin(const LiveObjects& live) {
  attribution_.clear();
  for (const auto& [key, o] : live) {
    const uint32_t slot = static_cast<uint32_t>(key >> 32);
    attribution_.on_object(key, g_state.heap.record(slot).start, o.size, 0, 0);
  }
}

void PmuHarvest::on_alloc(uint64_t key, uint64_t start, uint64_t size, uint64_t clock, uint64_t time_ns, uint32_t step,
                          uint32_t phase) {
  attribution_.on_object(key, start, size, clock, time_ns);
  attribution_.on_phase(clock, time_ns, step, phase);
}

void PmuHarvest::harvest(ProfileBuilder& builder, const ArmedLookup& armed, uint32_t open_step, uint32_t open_phase) {
  if (!started_) return;
  const uint64_t period = options_.sample_period;
  RunSum run;
  sampler_.drain([&](const PmuAccess& a) {
    SampleAttributor::Hit h;
    bool found;
    if (a.step_clock != 0) {
      found = attribution_.by_clock(a.addr, a.step_clock, &h);
    } else if (a.monotonic_ns != 0) {
      found = attribution_.by_time(a.addr, a.monotonic_ns, &h);
    } else {
      found = armed(a.addr, &h.key);
      h.step = open_step;
      h.phase = open_phase;
    }
    if (!found) {
      ++stats_.outside;
      if (a.step_clock != 0 && a.step_clock < attribution_.first_clock()) ++stats_.outside_before;
      if (a.kind == 2) ++stats_.outside_writebacks;
      return;
    }
    ++stats_.attributed;
    if (!run.open || run.key != h.key || run.step != h.step || run.phase != h.phase) {
      run.flush(builder);
      run.open = true;
      run.key = h.key;
      run.step = h.step;
      run.phase = h.phase;
    }
    (a.kind == 1 ? run.writes : a.kind == 2 ? run.writebacks : run.reads) += period;
  });
  run.flush(builder);
  // Events the plugin could not stamp (the ring's first page had moved) are lost samples too.
  stats_.lost = sampler_.stats().lost + sampler_.emulated_counts().stale_clock;
}

PmuHarvestStats PmuHarvest::stats() const { return stats_; }

}  // namespace sentinel::rt
