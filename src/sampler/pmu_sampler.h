// Hardware access sampling through perf_event: Intel PEBS (an event encoded by libpfm4, with
// precise_ip) or AMD IBS op (the ibs_op PMU), one event and one ring buffer per thread.
//
// Why per thread and not `inherit`: the kernel refuses to mmap a ring of an inherited per-task event
// (cpu == -1) because all children would write into one buffer, and per-CPU inherited events would
// miss the threads that already exist. So start() opens an event for every thread in /proc/self/task
// (pid = tid, cpu = -1), and the preload calls attach_thread(tid) for every thread created later.
// Rings of threads that have exited are drained once more and closed by drain().
//
// Failure is normal (VMs have no PMU; perf_event_paranoid forbids it): every failing call returns a
// ProbeResult with the errno that ruled the sampler out and a human reason, e.g.
// "perf_event_open: ENOENT (the CPU or hypervisor does not expose this event; no PMU in a VM?)".
//
// The OS boundary (perf_event_open, sysfs root) is injectable (PerfOs) so tests can make it fail in
// each way, or point it at a software perf event to run the real ring-buffer path on machines
// without a PMU.
//
// Thread safety: all member functions are serialized by an internal mutex; attach_thread() may be
// called from any thread while another drains. Not async-signal-safe.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sampler/ibs.h"
#include "sampler/perf_ring.h"
#include "sampler/pmu_event.h"

namespace sentinel {

enum class SamplerKind { kNone, kPebs, kIbs, kSoftware };
const char* sampler_kind_name(SamplerKind kind);  // "none", "pebs", "ibs", "software"

struct ProbeResult {
  bool ok = false;
  int err = 0;         // errno that ruled the sampler out (0 when ok)
  std::string reason;  // human explanation, including the errno name
};

struct PerfOs {
  std::function<int(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags)>
      perf_event_open;  // returns an fd, or -1 with errno set
  std::string sysfs_root = kDefaultSysfsPmuRoot;
};
PerfOs real_perf_os();

struct PmuSamplerOptions {
  SamplerKind kind = SamplerKind::kPebs;  // kPebs or kIbs
  std::string event;                      // PEBS: libpfm4 event name; empty: default_pebs_event()
  bool load_latency = false;              // PEBS default event: load latency instead of L3 miss
  uint32_t ldlat = 64;
  bool has_encoding = false;              // use `encoding` instead of libpfm4 (tests, custom PMUs)
  PmuEventEncoding encoding;
  uint64_t sample_period = 10007;         // events (PEBS) or ops (IBS, rounded to 16) per sample
  uint32_t precise_ip = 2;                // PEBS only
  bool weight_and_data_src = true;        // PEBS only: PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC
  uint32_t ring_pages = 8;                // data pages per thread ring; a power of two
};

// Fills *attr for `opt`. Fails (with errno and reason) if the event cannot be encoded or the PMU
// cannot be found.
ProbeResult build_pmu_attr(const PmuSamplerOptions& opt, const PerfOs& os, perf_event_attr* attr);

// Explains an errno from perf_event_open ("ENOENT (...)"); reads perf_event_paranoid for EACCES/EPERM.
std::string explain_perf_errno(int err);

class PmuSampler {
 public:
  // addr: data address; tid: thread; time: perf clock ns; is_write: -1 unknown, 0 load, 1 store.
  using AccessFn = std::function<void(uint64_t addr, uint32_t tid, uint64_t time, int is_write)>;

  explicit PmuSampler(PerfOs os = real_perf_os());
  ~PmuSampler();  // stop()
  PmuSampler(const PmuSampler&) = delete;
  PmuSampler& operator=(const PmuSampler&) = delete;

  // Builds the attribute and opens (then closes) one event on the calling thread.
  ProbeResult probe(const PmuSamplerOptions& opt);
  // Opens and maps an event for every thread of the process. On failure nothing stays open.
  ProbeResult start(const PmuSamplerOptions& opt);
  // Adds a thread (created after start). Replaces a ring left by an exited thread with the same tid.
  ProbeResult attach_thread(pid_t tid);
  // Reads every ring; calls fn for each sample with a data address. Returns samples delivered.
  size_t drain(const AccessFn& fn);
  // Closes every fd and unmaps every ring.
  void stop();

  size_t threads() const;
  RingStats stats() const;  // summed over all rings, including closed ones

 private:
  struct Ring;
  ProbeResult open_ring(pid_t tid, std::unique_ptr<Ring>* out);
  void close_ring(Ring& r);

  PerfOs os_;
  mutable std::mutex mu_;
  bool started_ = false;
  PmuSamplerOptions opt_;
  perf_event_attr attr_{};
  size_t page_ = 4096;
  std::vector<std::unique_ptr<Ring>> rings_;
  RingStats closed_stats_;
};

struct SamplerChoice {
  SamplerKind kind = SamplerKind::kNone;
  std::string reason;  // why this kind, and why the better ones were ruled out
};

// requested: "auto" (pebs, then ibs, then software), "pebs", "ibs", "software" or "none". A requested
// PMU sampler that cannot run falls back to software, and the reason says so. An unknown name gives
// kind none with the reason.
SamplerChoice choose_sampler(const std::string& requested, const PmuSamplerOptions& base,
                             const PerfOs& os = real_perf_os());

}  // namespace sentinel
