// Internals shared by engine.cc (queue, thread) and engine_move.cc (page moving). Not public.
#pragma once

#include <atomic>
#include <cstdint>

#include "migrate/engine.h"

namespace sentinel::migrate {

inline constexpr uint32_t kNil = UINT32_MAX;

// One queued, running or finished move. Fields other than the atomics are guarded by the engine
// lock, except that the engine thread reads the request fields of the slot it runs (they do not
// change while the slot is running).
struct Engine::Slot {
  uint64_t object_id = 0;
  uint64_t generation = 0;
  uintptr_t addr = 0;
  size_t len = 0;
  int target = -1;
  Priority priority = Priority::kBackground;
  uint32_t seq = 0;  // bumped when the slot is reused; part of the ticket
  State state = State::kUnknown;
  MoveResult result;
  uint32_t next = kNil;   // priority queue or free list
  uint32_t prev = kNil;   // priority queue
  uint32_t hnext = kNil;  // chain of queued slots in the same object-id hash bucket
  std::atomic<bool> cancel_requested{false};
};

// Test-and-test-and-set spinlock. Held only for a few list operations, never across a system call.
class Engine::SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace sentinel::migrate
