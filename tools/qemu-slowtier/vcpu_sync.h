// Keeping the vCPUs' virtual clocks in step. Each vCPU has its own clock (virtual_clock.h), and TCG
// runs them at host speeds that have nothing to do with their virtual speeds: a vCPU copying pages
// in the kernel runs through virtual time many times faster (per host second) than one emulating a
// training step's floating point. Without a rule, one clock runs ahead, and work that happens at the
// same time on a real machine (a migration thread and the training thread) is not at the same time
// in virtual time. The rule, as in conservative parallel simulators: a busy vCPU whose clock is more
// than `quantum_ns` ahead of the slowest other busy vCPU waits (in host time) until that one catches
// up. Idle (halted) vCPUs do not hold anyone back: they jump to the latest clock when they resume.
// The quantum (5 us, about one and a half epochs of 10,000 instructions) bounds how far apart two
// vCPUs' notions of "now" may be, and so how much an IPI or a lock hand-over between them may cost:
// a vCPU waiting here takes no interrupt, so a vCPU that spins until this one acknowledges an IPI
// (a TLB shootdown of a migration) spins, in virtual time, until it is a quantum ahead.
// A wait is bounded (`max_wait_host_ns`), because QEMU sometimes stops every vCPU for exclusive work
// (a translation-cache flush), during which the slow one cannot advance; a bounded wait that ends
// early is counted.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace sentinel::slowtier {

struct VcpuSyncParams {
  double quantum_ns = 5'000;             // virtual; 0 turns the rule off
  double max_wait_host_ns = 20'000'000;  // host time one wait may take
};

inline constexpr double kNoBusyVcpu = std::numeric_limits<double>::infinity();

// The lowest clock among the busy vCPUs other than `self` (kNoBusyVcpu if there is none).
double slowest_busy_other(const double* clocks, const bool* idle, size_t n, size_t self);

// Whether a vCPU at `mine` must wait for the slowest busy other one.
inline bool must_wait(double mine, double slowest_other, const VcpuSyncParams& p) {
  return p.quantum_ns > 0 && mine > slowest_other + p.quantum_ns;
}

}  // namespace sentinel::slowtier
