// Hardware access sampling through perf_event: Intel PEBS (an event encoded by libpfm4, with
// precise_ip) or AMD IBS op (the ibs_op PMU), one event and one ring buffer per thread; or, with
// PmuSource::kEmulated, one ring the slow-tier QEMU plugin fills with the cache-model misses of the
// process's object range (emulated_pmu.h) and that the same ring decoder reads.
//
// Sample times: perf events are opened with use_clockid = CLOCK_MONOTONIC, so a sample's time is
// comparable with the runtime's event times (now_ns()) and an access can be put in the phase it
// happened in; emulated samples carry the runtime's step clock instead (PmuAccess).
//
// Why per thread and not `inherit`: the kernel refuses to mmap a ring of an inherited per-task event
// (cpu == -1) because all children would write into one buffer, and per-CPU inherited events would
// miss the threads that already exist. So start() opens an event for every thread in /proc/self/task
// (pid = tid, cpu = -1), and the preload calls attach_thread(tid) for every thread created later.
// Rings of threads that have exited are drained once more and closed by drain().
//
// Failure is normal (VMs have no PMU; perf_event_paranoid forbids it): every failing call returns a
// Status (core/status.h) with the errno that ruled the sampler out and a human reason as its message, e.g.
// "perf_event_open: ENOENT (the CPU or hypervisor does not expose this event; no PMU in a VM?)".
//
// The kernel boundary is os/os.h's: perf_event_open, the ring's mmap and the sysfs reads go through its
// table, so tests make them fail in each way by installing a table (or the fault injector), and
// PmuSamplerOptions::sysfs_pmu_root points the PMU lookup at a fake tree. Tests may also use a software
// perf event to run the real ring-buffer path on machines without a PMU.
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

#include "core/status.h"
#include "sampler/emulated_pmu.h"
#include "sampler/ibs.h"
#include "sampler/perf_ring.h"
#include "sampler/pmu_event.h"

namespace sentinel {

enum class SamplerKind { kNone, kPebs, kIbs, kSoftware };
const char* sampler_kind_name(SamplerKind kind);  // "none", "pebs", "ibs", "software"

// Where PMU samples come from: the kernel's perf_event rings, or the slow-tier QEMU plugin.
enum class PmuSource { kPerf, kEmulated };
const char* pmu_source_name(PmuSource source);  // "perf_event", "qemu-slowtier"

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
  std::string sysfs_pmu_root = kDefaultSysfsPmuRoot;  // where the PMUs are listed (IBS: ibs_op/type)
  PmuSource source = PmuSource::kPerf;
  // kEmulated: the ring's data bytes (a power of two) and the address ranges to sample.
  uint64_t emulated_ring_bytes = uint64_t{64} << 20;
  std::vector<emulated_pmu::AddressRange> emulated_ranges;
};

// One sampled access.
struct PmuAccess {
  uint64_t addr = 0;          // data address
  uint32_t tid = 0;           // thread (0: unknown, always for the emulated PMU)
  uint32_t cpu = 0;           // emulated: the vCPU
  int kind = -1;              // -1 unknown, 0 load, 1 store, 2 write-back of a dirty line (emulated only)
  uint64_t monotonic_ns = 0;  // perf: CLOCK_MONOTONIC time of the sample; 0: unknown
  uint64_t step_clock = 0;    // emulated: the step clock word's value at the access; 0: unknown
};

// Fills *attr for `opt` and, if `encoded` is not null, says what it encoded, for the log: libpfm4's full
// name of the PEBS event, "explicit encoding" or "ibs_op type N". Fails (with errno and reason) if the
// event cannot be encoded or the PMU cannot be found.
Status build_pmu_attr(const PmuSamplerOptions& opt, perf_event_attr* attr, std::string* encoded = nullptr);

// Explains an errno from perf_event_open ("ENOENT (...)"); reads perf_event_paranoid for EACCES/EPERM.
std::string explain_perf_errno(int err);

class PmuSampler {
 public:
  using AccessFn = std::function<void(const PmuAccess&)>;

  explicit PmuSampler(EmulatedPmuOs emulated_os = real_emulated_pmu_os());
  ~PmuSampler();  // stop()
  PmuSampler(const PmuSampler&) = delete;
  PmuSampler& operator=(const PmuSampler&) = delete;

  // Builds the attribute and opens (then closes) one event on the calling thread; emulated: asks
  // whether the plugin answers.
  Status probe(const PmuSamplerOptions& opt);
  // Opens and maps an event for every thread of the process (emulated: registers one ring). On
  // failure nothing stays open.
  Status start(const PmuSamplerOptions& opt);
  // Adds a thread (created after start). Replaces a ring left by an exited thread with the same tid.
  // Emulated: nothing to do (the ring covers every thread).
  Status attach_thread(pid_t tid);
  // Reads every ring; calls fn for each sample with a data address. Returns samples delivered.
  size_t drain(const AccessFn& fn);
  // Closes every fd and unmaps every ring.
  void stop();

  size_t threads() const;
  // What the last successful start() opened, for the log: build_pmu_attr's `encoded` text, or the
  // emulated ring's size and period ("qemu-slowtier ring of 65536 KiB, period 1"); empty before.
  std::string description() const;
  RingStats stats() const;  // summed over all rings, including closed ones
  // Emulated and started: the step clock word the plugin copies into every sample (emulated_pmu.h);
  // otherwise nullptr.
  uint64_t* step_clock();
  // Emulated: what the plugin counted (zeros otherwise).
  EmulatedPmuCounts emulated_counts() const;

 private:
  struct Ring;
  Status open_ring(pid_t tid, std::unique_ptr<Ring>* out);
  void close_ring(Ring& r);

  EmulatedPmuOs emulated_os_;
  std::unique_ptr<EmulatedPmu> emulated_;  // set while an emulated ring is started
  EmulatedPmuCounts last_emulated_counts_;  // of the last emulated ring stopped
  mutable std::mutex mu_;
  bool started_ = false;
  PmuSamplerOptions opt_;
  perf_event_attr attr_{};
  size_t page_ = 4096;
  std::vector<std::unique_ptr<Ring>> rings_;
  RingStats closed_stats_;
  std::string description_;  // description()
};

struct SamplerChoice {
  SamplerKind kind = SamplerKind::kNone;
  PmuSource source = PmuSource::kPerf;  // for kPebs: where its samples come from
  std::string reason;  // why this kind, and why the better ones were ruled out
};

// Which PMU sources a choice may use (SENTINEL_PMU_SOURCE).
enum class PmuSourceSetting {
  kAuto,      // "pebs": perf_event, then the slow-tier plugin; "auto": perf_event only
  kPerf,      // perf_event only
  kEmulated,  // the slow-tier plugin only ("pebs" and "auto")
};

// requested: "auto" (pebs, then ibs, then software), "pebs", "ibs", "software" or "none". A requested
// PMU sampler that cannot run falls back to software, and the reason says so. An unknown name gives
// kind none with the reason. `sources` says where PEBS samples may come from (above).
SamplerChoice choose_sampler(const std::string& requested, const PmuSamplerOptions& base,
                             PmuSourceSetting sources = PmuSourceSetting::kAuto,
                             const EmulatedPmuOs& emulated_os = real_emulated_pmu_os());

}  // namespace sentinel
