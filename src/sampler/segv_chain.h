// The SIGSEGV disposition the *program* wants, kept while the software sampler owns the real one, and
// delivery of faults that are not the sampler's to it, the way the kernel would have delivered them.
//
// Why: the sampler must install its own SIGSEGV handler, but a program (or a runtime inside it, such
// as a JIT or a crash reporter) may have installed one before, or install one later. The preload
// interposes sigaction()/signal() for SIGSEGV and routes them to set(), so the program sees its own
// handler as the current one while the sampler keeps the kernel-level slot.
//
// Thread safety: set() may be called from any thread (serialized by an internal mutex); get() and
// deliver() are async-signal-safe (no locks, no allocation). The stored disposition is double
// buffered: a reader running concurrently with two back-to-back set() calls may copy a torn value;
// programs change their SIGSEGV handler rarely, so this is accepted.
#pragma once

#include <csignal>

// glibc's own entry point for sigaction(). The sampler installs and restores its handler through it, so
// that inside libsentinel.so, which interposes sigaction() for the program, the call reaches the kernel
// rather than Sentinel's interposer.
extern "C" int __sigaction(int signum, const struct sigaction* act, struct sigaction* old);

namespace sentinel {

class SegvChain {
 public:
  // Installs `sampler` in the kernel slot and, in the same step under the chain's lock, starts keeping
  // the program's disposition here: a program's sigaction(SIGSEGV) through program_sigaction() comes
  // either before (it reaches the kernel and becomes the kept one) or after (it is kept here). With the
  // two steps apart, a handler the program installed in between (while the sampler allocated its
  // tables) reached neither the kernel nor the sampler, and the program's own fault killed it. Returns
  // false with errno set if the kernel refused.
  static bool take_over(const struct sigaction& sampler);
  // Gives the kernel slot back to the program's kept disposition and stops keeping it (same lock).
  static void hand_back();
  // The program's sigaction(SIGSEGV, act, old): kept here while taken over, else passed to `kernel`.
  static int program_sigaction(const struct sigaction* act, struct sigaction* old,
                               int (*kernel)(int, const struct sigaction*, struct sigaction*));
  // Replaces the program's disposition; writes the one it replaces to *old if non-null.
  static void set(const struct sigaction& act, struct sigaction* old);
  // Copies the program's current disposition.
  static void get(struct sigaction* out);
  // Hands a fault the sampler does not own to the program's disposition:
  //  - a handler (SA_SIGINFO or plain) is called with the program's sa_mask blocked, honouring
  //    SA_RESETHAND;
  //  - SIG_DFL: the default disposition is restored in the kernel; a hardware fault then re-executes and
  //    kills the process with SIGSEGV (core dump as without the sampler), a signal sent by kill/raise is
  //    re-sent to this thread and kills on return;
  //  - SIG_IGN: a sent signal is dropped; a hardware fault cannot be ignored (the kernel would kill),
  //    so it is treated as SIG_DFL.
  static void deliver(int sig, siginfo_t* info, void* ucontext);
  // Whether deliver() would end the process: a hardware fault (si_code > 0) with no program handler.
  // Async-signal-safe.
  static bool fault_is_fatal(const siginfo_t* info);
};

}  // namespace sentinel
