// The calibration bench of `sentinel-slowtier calibrate` (docs/slow-tier-emulator.md,
// "Calibration"): kernels run in the guest under the slow-tier plugin, measured in virtual time
// through the mailbox, printed next to the tier preset's published figures.
//
// Thread safety: the helpers may be called from any thread (each read goes through the mailbox).
#pragma once

#include <cstddef>
#include <cstdint>

#include "plan/tier_model.h"
#include "sentinel/slowtier.h"

namespace sentinel::slowtier {

using Counters = sentinel_slowtier_counters;

// Reads the counters; prints why on failure (no plugin answered).
bool read_or_complain(Counters* c);

// after - before for every counter; the per-vCPU arrays too.
Counters counters_delta(const Counters& before, const Counters& after);

// The CPU the calibration pins its measuring thread to: the last one. The guest should be booted
// with nohz_full on it (SENTINEL_GUEST_KERNEL_ARGS=nohz_full=1): the tick arrives at the host's rate,
// and TCG runs hundreds of times slower than the virtual clock, so on a ticking CPU the timer
// interrupts alone would add ~1 M kernel instructions per host second to a kernel's time.
int measuring_cpu();
void pin_to_cpu(int cpu);

// A region measured on the calling thread's own vCPU clock (the thread is pinned): the machine's
// clock is the latest of all vCPUs and moves with whatever the other vCPU does meanwhile.
struct Measured {
  Counters d{};          // machine-wide counter differences
  double virtual_ns = 0; // of the measuring vCPU
};
// Reads the counters before and after `fn`. False (with a message) if no plugin answered or the
// thread changed vCPU in between.
template <typename F>
bool measure_on_own_vcpu(F&& fn, Measured* out) {
  Counters a, b;
  if (!read_or_complain(&a)) return false;
  fn();
  if (!read_or_complain(&b)) return false;
  out->d = counters_delta(a, b);
  if (a.vcpu != b.vcpu || b.vcpu >= SENTINEL_SLOWTIER_MAX_VCPUS) return false;
  out->virtual_ns = static_cast<double>(out->d.vcpu_virtual_ns[b.vcpu]);
  return true;
}

// A buffer of `bytes` whose pages are all on `node`: mapped, bound with mbind, touched and checked
// page by page with move_pages. huge: 2 MiB aligned with MADV_HUGEPAGE (whether the kernel backs it
// with huge pages is its choice), else MADV_NOHUGEPAGE. nullptr (with a message) on failure.
void* alloc_on_node(size_t bytes, int node, bool huge);
void free_on_node(void* p, size_t bytes);

struct CalibrateOptions {
  size_t mib = 64;          // buffer per node for the memory kernels
  size_t migrate_mib = 32;  // buffer per migration row
  bool check = false;       // exit 1 unless every direction is right (not a timing)
};

// Pointer chase and streams over a buffer on node 0, then node 1. Returns the failed checks.
int calibrate_memory(const MemorySystem& tier, const CalibrateOptions& opt);
// Page migration with move_pages in batches, each way, 4 KiB and 2 MiB pages; then a compute thread
// alone and while another thread migrates. Returns the failed checks.
int calibrate_migration(const MemorySystem& tier, const CalibrateOptions& opt);

}  // namespace sentinel::slowtier
