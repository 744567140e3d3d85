// A tiny test-and-test-and-set lock for critical sections of a few dozen instructions on the allocation
// path. It never allocates and never sleeps in the kernel, so it is safe inside malloc and across fork
// (the owner re-initialises it in the child).
//
// REQUIRES: no system call, no allocation and no call out of Sentinel while it is held.
#pragma once

#include <atomic>

namespace sentinel {

class SpinLock {
 public:
  constexpr SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
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

}  // namespace sentinel
