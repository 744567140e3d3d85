#include "sampler/segv_chain.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace sentinel {
namespace {

// Constant-initialized (no dynamic construction at load time, so the preload can use it early).
struct sigaction g_slots[2];
std::atomic<int> g_current{0};
std::mutex g_set_mutex;
bool g_taken_over = false;  // guarded by g_set_mutex

// Writes into the slot readers are not using and publishes it. Callers serialize (mutex, or the
// SA_RESETHAND path inside a handler, see deliver()).
void publish(const struct sigaction& act) {
  const int next = 1 - g_current.load(std::memory_order_relaxed);
  std::memcpy(&g_slots[next], &act, sizeof act);
  g_current.store(next, std::memory_order_release);
}

void default_disposition(struct sigaction* out) {
  std::memset(out, 0, sizeof *out);
  out->sa_handler = SIG_DFL;
  sigemptyset(&out->sa_mask);
}

}  // namespace

void SegvChain::set(const struct sigaction& act, struct sigaction* old) {
  std::lock_guard<std::mutex> lock(g_set_mutex);
  if (old != nullptr) std::memcpy(old, &g_slots[g_current.load(std::memory_order_relaxed)], sizeof *old);
  publish(act);
}

bool SegvChain::take_over(const struct sigaction& sampler) {
  std::lock_guard<std::mutex> lock(g_set_mutex);
  struct sigaction previous;
  if (__sigaction(SIGSEGV, &sampler, &previous) != 0) return false;
  publish(previous);
  g_taken_over = true;
  return true;
}

void SegvChain::hand_back() {
  std::lock_guard<std::mutex> lock(g_set_mutex);
  if (!g_taken_over) return;
  __sigaction(SIGSEGV, &g_slots[g_current.load(std::memory_order_relaxed)], nullptr);
  g_taken_over = false;
}

int SegvChain::program_sigaction(const struct sigaction* act, struct sigaction* old,
                                 int (*kernel)(int, const struct sigaction*, struct sigaction*)) {
  std::lock_guard<std::mutex> lock(g_set_mutex);
  if (!g_taken_over) return kernel(SIGSEGV, act, old);
  const struct sigaction current = g_slots[g_current.load(std::memory_order_relaxed)];
  if (act != nullptr) publish(*act);
  if (old != nullptr) *old = current;
  return 0;
}

void SegvChain::get(struct sigaction* out) {
  std::memcpy(out, &g_slots[g_current.load(std::memory_order_acquire)], sizeof *out);
}

bool SegvChain::fault_is_fatal(const siginfo_t* info) {
  if (info == nullptr || info->si_code <= 0) return false;  // a sent signal: the program's business
  struct sigaction act;
  get(&act);
  return (act.sa_flags & SA_SIGINFO) != 0 ? act.sa_sigaction == nullptr
                                          : act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN;
}

void SegvChain::deliver(int sig, siginfo_t* info, void* ucontext) {
  struct sigaction act;
  get(&act);
  const bool sent = info == nullptr || info->si_code <= 0;  // kill(), raise(), sigqueue()
  const bool has_handler = (act.sa_flags & SA_SIGINFO) != 0
                               ? act.sa_sigaction != nullptr
                               : act.sa_handler != SIG_DFL && act.sa_handler != SIG_IGN;
  if (has_handler) {
    if ((act.sa_flags & SA_RESETHAND) != 0) {
      struct sigaction dfl;
      default_disposition(&dfl);
      publish(dfl);  // no mutex in a handler; a concurrent set() may be lost (documented race)
    }
    sigset_t old_mask;
    pthread_sigmask(SIG_BLOCK, &act.sa_mask, &old_mask);
    if ((act.sa_flags & SA_SIGINFO) != 0) {
      act.sa_sigaction(sig, info, ucontext);
    } else {
      act.sa_handler(sig);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    return;
  }
  if (act.sa_handler == SIG_IGN && sent) return;
  // Default action: give the kernel slot back to SIG_DFL. A fault re-executes on return and kills;
  // a sent signal is re-sent (it stays pending while this handler blocks it, then kills on return).
  struct sigaction dfl;
  default_disposition(&dfl);
  __sigaction(sig, &dfl, nullptr);
  if (sent) syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

}  // namespace sentinel
