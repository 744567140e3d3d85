#include "signals.h"

#include <dlfcn.h>

#include <atomic>
#include <cerrno>

#include "profiler.h"
#include "sampler/software_sampler.h"

namespace sentinel::rt {
namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SigaltstackFn = int (*)(const stack_t*, stack_t*);

// Alternate stacks seen, [start, end). Entries are claimed with a counter and published start-last, so a
// reader never sees a half-written entry; when the table is full, later stacks are not recorded (counted).
constexpr uint32_t kMaxAltStacks = 1024;
struct AltStack {
  std::atomic<uintptr_t> start{0};
  std::atomic<uintptr_t> end{0};
};
AltStack g_alt_stacks[kMaxAltStacks];
std::atomic<uint32_t> g_alt_stack_count{0};

void remember_alt_stack(uintptr_t start, uintptr_t end) {
  const uint32_t n = g_alt_stack_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n && i < kMaxAltStacks; ++i) {
    if (g_alt_stacks[i].start.load(std::memory_order_acquire) == start &&
        g_alt_stacks[i].end.load(std::memory_order_relaxed) == end) {
      return;  // a thread re-installing its stack
    }
  }
  const uint32_t i = g_alt_stack_count.fetch_add(1, std::memory_order_acq_rel);
  if (i >= kMaxAltStacks) return;
  g_alt_stacks[i].end.store(end, std::memory_order_relaxed);
  g_alt_stacks[i].start.store(start, std::memory_order_release);
}
using SignalFn = sighandler_t (*)(int, sighandler_t);

SigactionFn real_sigaction() {
  static SigactionFn fn = reinterpret_cast<SigactionFn>(::dlsym(RTLD_NEXT, "sigaction"));
  return fn;
}
SigaltstackFn real_sigaltstack() {
  static SigaltstackFn fn = reinterpret_cast<SigaltstackFn>(::dlsym(RTLD_NEXT, "sigaltstack"));
  return fn;
}
SignalFn real_signal() {
  static SignalFn fn = reinterpret_cast<SignalFn>(::dlsym(RTLD_NEXT, "signal"));
  return fn;
}

}  // namespace

int sigaction(int signum, const struct sigaction* act, struct sigaction* old) noexcept {
  SigactionFn fn = real_sigaction();
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // SIGSEGV: the sampler may hold the kernel slot; the program's disposition is then kept for it.
  if (signum == SIGSEGV) return SoftwareSampler::program_sigaction(act, old, fn);
  return fn(signum, act, old);
}

sighandler_t signal(int signum, sighandler_t handler) noexcept {
  if (signum == SIGSEGV) {
    SigactionFn fn = real_sigaction();
    if (fn == nullptr) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    // glibc's signal() has BSD semantics: the handler stays installed and system calls restart.
    struct sigaction act {};
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, signum);
    struct sigaction old {};
    if (SoftwareSampler::program_sigaction(&act, &old, fn) != 0) return SIG_ERR;
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

int sigaltstack(const stack_t* ss, stack_t* old) noexcept {
  SigaltstackFn fn = real_sigaltstack();
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int rc = fn(ss, old);
  if (rc == 0 && ss != nullptr && (ss->ss_flags & SS_DISABLE) == 0 && ss->ss_size > 0) {
    const auto start = reinterpret_cast<uintptr_t>(ss->ss_sp);
    remember_alt_stack(start, start + ss->ss_size);
  }
  return rc;
}

bool alt_stack_overlaps(uintptr_t start, uint64_t len) noexcept {
  const uint32_t n = g_alt_stack_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n && i < kMaxAltStacks; ++i) {
    const uintptr_t s = g_alt_stacks[i].start.load(std::memory_order_acquire);
    if (s == 0) continue;  // being written
    const uintptr_t e = g_alt_stacks[i].end.load(std::memory_order_relaxed);
    if (s < start + len && start < e) return true;
  }
  return false;
}

}  // namespace sentinel::rt
