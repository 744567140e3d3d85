// BoundedRing<T, kCapacity>: a fixed ring that hands values from producers to one consumer thread, for
// the allocation path's object events (core/event_ring.h) and the migration engine's completions
// (preload/manager.cc).
//
// Producers are serialised by the caller (one producer thread, or reservations made under the caller's
// lock), so the order of the values is the order of reservation; a producer may fill its reserved
// position later, after its lock is released, and fills may come in any order. Each slot says when it
// is filled (its `ready` word: position + 1, release/acquire), so the consumer stops at the first
// reserved position that is not filled yet and never reads a half-written value. The consumer frees a
// slot for producers by advancing the tail (release; producers load it with acquire).
//
// Never allocates and never blocks: a full ring refuses the reservation and counts it as dropped (the
// newest value is lost, nothing is overwritten; the consumer knows its view is incomplete).
//
// Thread safety: reserve()/push() by one producer at a time; fill() from any thread, exactly once per
// ticket; pop()/pop_if()/peek()/popped() by one consumer thread; dropped()/pushed()/empty() from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace sentinel {

template <typename T, uint32_t kSlots>
class BoundedRing {
 public:
  static_assert(kSlots != 0 && (kSlots & (kSlots - 1)) == 0, "the capacity is a power of two");
  static constexpr uint32_t kCapacity = kSlots;
  static constexpr uint64_t kNoTicket = ~uint64_t{0};

  // Producer, serialised by the caller: a position for one value, or kNoTicket when the ring is full.
  uint64_t reserve() noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) >= kCapacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return kNoTicket;
    }
    head_.store(head + 1, std::memory_order_relaxed);
    return head;
  }
  // Producer, any thread, exactly once per reserved position (kNoTicket: nothing to do).
  void fill(uint64_t ticket, const T& value) noexcept {
    if (ticket == kNoTicket) return;
    Slot& s = slots_[ticket & (kCapacity - 1)];
    s.value = value;
    s.ready.store(ticket + 1, std::memory_order_release);
  }
  bool push(const T& value) noexcept {
    const uint64_t t = reserve();
    fill(t, value);
    return t != kNoTicket;
  }
  // Consumer: the oldest value, when it is filled.
  bool pop(T* out) noexcept {
    return pop_if([](const T&) { return true; }, out);
  }
  // Consumer: the oldest value, when it is filled and `take(value)` says so (else it stays first).
  template <typename Take>
  bool pop_if(Take take, T* out) noexcept {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    Slot& s = slots_[tail & (kCapacity - 1)];
    if (s.ready.load(std::memory_order_acquire) != tail + 1 || !take(s.value)) return false;
    *out = s.value;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  // Consumer: the value at position `pos` (at or after the oldest not yet popped), when it is filled,
  // without popping it. A filled position stays as it is until the consumer pops past it.
  bool peek(uint64_t pos, T* out) const noexcept {
    if (pos < tail_.load(std::memory_order_relaxed)) return false;
    const Slot& s = slots_[pos & (kCapacity - 1)];
    if (s.ready.load(std::memory_order_acquire) != pos + 1) return false;
    *out = s.value;
    return true;
  }
  // Consumer: the position of the oldest value not yet popped.
  uint64_t popped() const noexcept { return tail_.load(std::memory_order_relaxed); }
  bool empty() const noexcept {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire);
  }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> ready{0};  // position + 1 once filled
    T value{};
  };
  std::atomic<uint64_t> head_{0};
  std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
  Slot slots_[kCapacity] = {};
};

}  // namespace sentinel
