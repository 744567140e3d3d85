// Object events handed from the allocation path to the service thread: a bounded single-producer,
// single-consumer ring. The producer side is serialised by the caller (the runtime pushes under its
// step-clock lock), so several program threads may push, one at a time.
//
// Never allocates and never blocks: a full ring drops the event and counts it (the consumer then
// knows its view is incomplete).
#pragma once

#include <atomic>
#include <cstdint>

namespace sentinel {

enum class ObjectEventKind : uint8_t { kAlloc, kFree };

struct ObjectEvent {
  ObjectEventKind kind;
  uint32_t slot;
  uint32_t generation;
  uint32_t occurrence;
  uint32_t event;    // position on the step clock
  uint32_t period;   // the detector's period at the time
  int64_t step;      // step index, -1 when unknown
  uint64_t relocks;  // the detector's re-detection count: a change means a new step structure
  uint64_t tag;
  uint64_t site;
  uint64_t size;
  uint64_t time_ns;
  uint64_t live_bytes;  // object bytes alive after this event
};

class EventRing {
 public:
  static constexpr uint32_t kCapacity = 1u << 15;  // power of two

  // Producer (serialised by the caller).
  bool push(const ObjectEvent& e) noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) >= kCapacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    slots_[head & (kCapacity - 1)] = e;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  // Consumer (one thread).
  bool pop(ObjectEvent* out) noexcept {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return false;
    *out = slots_[tail & (kCapacity - 1)];
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  bool empty() const noexcept {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire);
  }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> head_{0};
  std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
  ObjectEvent slots_[kCapacity] = {};
};

}  // namespace sentinel
