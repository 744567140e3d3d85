// sigaction()/signal() for SIGSEGV while the software sampler owns the kernel's SIGSEGV slot: the
// program's handler is kept by the sampler's chain (sampler/segv_chain.h) and gets every fault that is
// not the sampler's, exactly as if it were installed. Every other call goes to libc unchanged.
#pragma once

#include <csignal>

namespace sentinel::rt {

int sigaction(int signum, const struct sigaction* act, struct sigaction* old) noexcept;
sighandler_t signal(int signum, sighandler_t handler) noexcept;

}  // namespace sentinel::rt
