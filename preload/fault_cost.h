// What recycling a fast page costs on this machine, for the in-process planner
// (MemorySystem::fault_ns_per_byte): a parked page dropped to make room (MADV_DONTNEED, as a trim does)
// and the fresh page a later birth faults in and the kernel zeroes instead. Those are what moves that take
// parked pages' room cost the program (plan/cost_model.h), and a VM's are several times a bare-metal
// server's, so managed mode plans with its own machine's figure rather than a preset's.
//
// 4 KiB pages: in a training process the recycling of huge-page extents cost about what 4 KiB pages do
// here, although a quiet measurement of huge pages says 6x less (docs/tier-model.md, "Recycling fast
// pages"), so one figure serves both.
//
// Runs on the service thread before the first plan (a few ms): maps 2 MiB of its own, faults them in, then
// three times drops them and faults them in again as a fast birth does (MADV_POPULATE_WRITE where the
// kernel has it, page by page where not), keeps the fastest round, unmaps them.
// Timed with the step clock (os/measure_clock.h): virtual time in the two-node guest.
#pragma once

#include <cstdint>

namespace sentinel::rt {

struct FaultCost {
  bool valid = false;
  double ns_per_byte = 0;
};

FaultCost measure_fault_cost() noexcept;

// The same cost as this process has paid it so far: the time its threads spent dropping parked fast pages
// and faulting fast births in (RuntimeCounters::fast_turnover_ns) per byte faulted in with
// MADV_POPULATE_WRITE; valid once kEnoughTurnoverBytes were faulted in that way (never on a kernel without
// it, where births fault page by page untimed). Reported in the stats beside the price the plans assumed
// (fault_ns_per_byte_paid, _planned), not planned with: the quiet measurement above said 0.10-0.40 ns per
// byte on this VM where a training process paid 0.34-0.44 (densenet121 and resnet50, dry run at 20%), but
// plans made at the paid price ran slower, not faster (docs/results.md, 2026-12-06 evening). What it does
// not see: the other threads' share of the cost (TLB shootdowns, memory bandwidth) and the cache the
// zeroing evicts.
inline constexpr uint64_t kEnoughTurnoverBytes = 64ull << 20;
FaultCost measured_turnover_cost() noexcept;

}  // namespace sentinel::rt
