// Making fixed-size storage resident up front: the runtime's rings (object events, move completions) are
// static arrays of a few MiB whose pages the kernel maps only when first written. Left alone, a ring's
// resident memory grows by the bytes of each step's records until its first wrap (for the object-event
// ring of a small model: hundreds of steps), which a soak cannot tell from a leak and which puts page
// faults on the allocation path. Populating the ring when it is switched on makes that memory resident
// at once and the runtime's footprint flat from the first step (docs/reliability.md, "Long runs").
//
// Thread safety: any thread; the contents of the range are not changed (MADV_POPULATE_WRITE faults the
// pages in as writable without writing to them), so it may run while others use the memory. No
// allocation, no lock.
#pragma once

#include <cstddef>

namespace sentinel::os {

// Faults in every page that [addr, addr + bytes) touches, writable (MADV_POPULATE_WRITE, Linux 5.14+),
// through the OS layer. False when the kernel refuses (older kernel, fault injection): the memory is
// then faulted in on first write as before, and nothing else changes.
bool make_resident(const void* addr, size_t bytes) noexcept;

}  // namespace sentinel::os
