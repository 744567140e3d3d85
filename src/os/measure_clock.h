// The clock Sentinel measures the program with: the times of allocation events (and so the phase
// durations of a profile), the duration of a migration (and so the channel's measured bandwidth),
// the completion time of a move (and so whether a prefetch was late). Timeouts, pacing and the run's
// wall time stay on CLOCK_MONOTONIC (now_ns in the preload): they are about the host, not the program.
//
// Normally this is CLOCK_MONOTONIC. In the two-node QEMU guest with the slow-tier plugin
// (docs/slow-tier-emulator.md) TCG dilates the guest's time unevenly (a training step's floating
// point runs hundreds of times slower than a page copy in the kernel), so a plan made from wall-clock
// phase times and a wall-clock migration bandwidth would be made for a machine that does not exist.
// There the plugin's virtual clock is the machine's time: use_emulator_clock() switches to it (the
// machine's clock, the latest of the vCPUs', which the plugin keeps in step within a quantum).
//
// Cost: CLOCK_MONOTONIC through the vDSO; in the emulator one mailbox request (a marked store the
// plugin answers within the instruction) through a page of the calling CPU. No allocation, no lock:
// safe on the allocation path.
//
// Thread safety: measure_ns() from any thread; use_emulator_clock() once, at initialisation, before
// other threads measure (a switch while another thread measures mixes clocks in that one interval).
#pragma once

#include <cstdint>

namespace sentinel::os {

enum class MeasureClock { kMonotonic, kEmulator };

// Nanoseconds on the measuring clock; only differences mean anything.
uint64_t measure_ns() noexcept;

// Switches to the emulator's virtual clock if the slow-tier plugin answers a request; returns whether
// it did.
bool use_emulator_clock() noexcept;

MeasureClock measure_clock() noexcept;
const char* measure_clock_name(MeasureClock c) noexcept;  // "monotonic", "emulator"

}  // namespace sentinel::os
