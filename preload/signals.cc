#include "signals.h"

#include <dlfcn.h>

#include <cerrno>

#include "profiler.h"
#include "sampler/software_sampler.h"

namespace sentinel::rt {
namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);

SigactionFn real_sigaction() {
  static SigactionFn fn = reinterpret_cast<SigactionFn>(::dlsym(RTLD_NEXT, "sigaction"));
  return fn;
}
SignalFn real_signal() {
  static SignalFn fn = reinterpret_cast<SignalFn>(::dlsym(RTLD_NEXT, "signal"));
  return fn;
}

}  // namespace

int sigaction(int signum, const struct sigaction* act, struct sigaction* old) noexcept {
  if (signum == SIGSEGV && profiler_owns_sigsegv()) {
    if (act != nullptr) {
      SoftwareSampler::set_program_handler(*act, old);
    } else if (old != nullptr) {
      SoftwareSampler::get_program_handler(old);
    }
    return 0;
  }
  SigactionFn fn = real_sigaction();
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return fn(signum, act, old);
}

sighandler_t signal(int signum, sighandler_t handler) noexcept {
  if (signum == SIGSEGV && profiler_owns_sigsegv()) {
    // glibc's signal() has BSD semantics: the handler stays installed and system calls restart.
    struct sigaction act {};
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, signum);
    struct sigaction old {};
    SoftwareSampler::set_program_handler(act, &old);
    // signal() can only return a one-argument handler; a previous SA_SIGINFO handler is returned
    // through void* the way glibc does (the caller may only pass it back to signal/sigaction).
    if (old.sa_flags & SA_SIGINFO) return reinterpret_cast<sighandler_t>(reinterpret_cast<void*>(old.sa_sigaction));
    return old.sa_handler;
  }
  SignalFn fn = real_signal();
  if (fn == nullptr) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  return fn(signum, handler);
}

}  // namespace sentinel::rt
