// Messages produced where logging is not allowed (inside malloc, free or a signal handler) are queued
// here, formatted on the caller's stack, and written out later by a thread that may allocate.
//
// Thread safety: push() and drain() may run concurrently from any threads. push() never allocates and
// never blocks for long (a spin lock around a 200-byte copy); a full queue drops the message and
// counts it.
#pragma once

#include <cstdint>

#include "core/config.h"
#include "core/spin_lock.h"

namespace sentinel {

class DeferredLog {
 public:
  static constexpr uint32_t kCapacity = 128;
  static constexpr uint32_t kMessageBytes = 200;

  void push(LogLevel level, const char* text) noexcept;
  // Calls sink(level, text) for each queued message in order, then forgets them.
  template <typename Sink>
  void drain(Sink sink) noexcept;
  uint64_t dropped() const noexcept { return dropped_; }
  void fork_prepare() noexcept { lock_.lock(); }
  void fork_parent() noexcept { lock_.unlock(); }
  void fork_child() noexcept { lock_.reset_after_fork(); }

 private:
  struct Message {
    LogLevel level;
    char text[kMessageBytes];
  };
  SpinLock lock_;
  Message ring_[kCapacity] = {};
  uint32_t head_ = 0;  // next to read
  uint32_t count_ = 0;
  uint64_t dropped_ = 0;
};

template <typename Sink>
void DeferredLog::drain(Sink sink) noexcept {
  for (;;) {
    Message m;
    {
      SpinGuard guard(lock_);
      if (count_ == 0) return;
      m = ring_[head_];
      head_ = (head_ + 1) % kCapacity;
      --count_;
    }
    sink(m.level, m.text);
  }
}

}  // namespace sentinel
