// A tiny test-and-test-and-set lock for critical sections of a few dozen instructions on the allocation
// path. It never allocates and never sleeps in the kernel, so it is safe inside malloc and across fork
// (the owner re-initialises it in the child).
//
// Waiting: a waiter spins (pause) for kSpins rounds, then gives its CPU away with sched_yield() between
// looks. With more runnable threads than CPUs the holder may be preempted inside its few instructions; a
// waiter that only spun would then burn its whole time slice while the holder waits for a CPU (a convoy:
// bench/preload's mt_large case, 8 threads on 2 CPUs). Yielding lets the holder finish.
//
// REQUIRES: no system call, no allocation and no call out of Sentinel while it is held.
//
// It lives in os/ because its waiting gives the CPU back to the kernel (sched_yield), and migrate/, which
// may use os but not core (src/README.md), takes it too. core/spin_lock.h names it for core and above.
#pragma once

#include <sched.h>

#include <atomic>

namespace sentinel::os {

// The two ways Sentinel waits without sleeping in the kernel, for every area: a pause between looks at a
// word another CPU will change within a few instructions, and giving the CPU away (sched_yield) when the
// thread waited for may need it to finish. Both are safe inside malloc/free and in signal handlers.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
inline void yield_cpu() noexcept { sched_yield(); }

class SpinLock {
 public:
  constexpr SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  static constexpr int kSpins = 128;

  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpins) {
          cpu_relax();
        } else {
          yield_cpu();
        }
      }
    }
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  // Only for the child after fork(), where the thread that held it no longer exists.
  void reset_after_fork() noexcept { locked_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool> locked_{false};
};

class SpinGuard {
 public:
  explicit SpinGuard(SpinLock& l) noexcept : lock_(l) { lock_.lock(); }
  ~SpinGuard() { lock_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace sentinel::os
