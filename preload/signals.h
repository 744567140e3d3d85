// sigaction()/signal() for SIGSEGV while the software sampler owns the kernel's SIGSEGV slot: the
// program's handler is kept by the sampler's chain (sampler/segv_chain.h) and gets every fault that is
// not the sampler's, exactly as if it were installed. Every other call goes to libc unchanged.
//
// sigaltstack(): the kernel writes a signal's frame on the alternate stack; if that stack lies in an object
// whose pages the software sampler has protected, the kernel cannot deliver the signal and kills the
// process (Python's faulthandler allocates its alternate stack with malloc, often above the object size).
// Every alternate stack a thread installs is recorded, and the profiler never protects an object that
// overlaps one (alt_stack_overlaps).
#pragma once

#include <csignal>
#include <cstdint>

namespace sentinel::rt {

int sigaction(int signum, const struct sigaction* act, struct sigaction* old) noexcept;
sighandler_t signal(int signum, sighandler_t handler) noexcept;
int sigaltstack(const stack_t* ss, stack_t* old) noexcept;

// Whether [start, start + len) overlaps an alternate signal stack a thread of the program has installed
// (never forgotten: a disabled one may be enabled again). Lock-free; any thread.
bool alt_stack_overlaps(uintptr_t start, uint64_t len) noexcept;

}  // namespace sentinel::rt
