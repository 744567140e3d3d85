// Object events handed from the allocation path to the service thread: a bounded ring with one consumer.
// Producers are serialised by the caller (the runtime reserves under its step-clock lock), so the order of
// the events is the order of the step clock; a producer may fill its reserved slot later, after the lock
// is released (the allocation path reserves the event when it reads the clock and fills it in once the
// extent exists). The consumer stops at the first reserved slot that is not filled yet.
//
// Never allocates and never blocks: a full ring refuses the reservation and counts the event as dropped
// (the consumer then knows its view is incomplete).
#pragma once

#include <atomic>
#include <cstdint>

namespace sentinel {

// kAborted: a reserved event whose allocation did not happen (the heap was full); consumers skip it.
enum class ObjectEventKind : uint8_t { kAlloc, kFree, kAborted };

struct ObjectEvent {
  ObjectEventKind kind;
  uint8_t pool;      // kAlloc: the heap pool the object was born in
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
  uint64_t extent_bytes;
  uint64_t time_ns;
  uint64_t live_bytes;  // object bytes alive after this event
};

class EventRing {
 public:
  static constexpr uint32_t kCapacity = 1u << 15;  // power of two
  static constexpr uint64_t kNoTicket = ~uint64_t{0};

  // Producer, serialised by the caller: a position for one event, or kNoTicket when the ring is full.
  uint64_t reserve() noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) >= kCapacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return kNoTicket;
    }
    head_.store(head + 1, std::memory_order_relaxed);
    return head;
  }
  // Producer, any thread, exactly once per reserved position.
  void fill(uint64_t ticket, const ObjectEvent& e) noexcept {
    if (ticket == kNoTicket) return;
    Slot& s = slots_[ticket & (kCapacity - 1)];
    s.event = e;
    s.ready.store(ticket + 1, std::memory_order_release);
  }
  bool push(const ObjectEvent& e) noexcept {
    const uint64_t t = reserve();
    fill(t, e);
    return t != kNoTicket;
  }
  // Consumer (one thread).
  bool pop(ObjectEvent* out) noexcept {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    Slot& s = slots_[tail & (kCapacity - 1)];
    if (s.ready.load(std::memory_order_acquire) != tail + 1) return false;
    *out = s.event;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  bool empty() const noexcept {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire);
  }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> ready{0};  // position + 1 once filled
    ObjectEvent event{};
  };
  std::atomic<uint64_t> head_{0};
  std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
  Slot slots_[kCapacity] = {};
};

}  // namespace sentinel
