// HostLedger: one fast-memory budget shared by the processes (ranks) of a job on one host, through a
// small file in shared memory (/dev/shm/sentinel-ledger-<hash of job and host>). Protocol, names and
// failure cases: docs/distributed.md.
//
// Layout: a header (magic, version, the budget) and kSlots slots. A rank owns one slot: an owner word
// (claim generation, state, pid), the owner's start time, and `held`, the fast bytes the rank holds.
// Only the owner changes its own `held`, except the recovery of a dead owner, which sets it to 0.
//
// Reservation (try_reserve) is optimistic and lock-free: add the bytes to the own slot (seq_cst), then
// sum every slot's `held` (seq_cst loads); if the sum exceeds the budget, take the bytes back and fail.
// Of two ranks reserving at once, the later one's sum sees the earlier one's addition (Dekker-style:
// each adds before it reads), so the sum of the bytes of successful reservations never exceeds the
// budget. Races can only make a reservation fail that would have fitted (the object then goes slow).
// A rank killed at any point leaves in its slot an upper bound of what it held (its committed bytes
// plus at most the in-flight reservations of its threads); recovery sets that to 0, so nothing leaks
// and nothing is counted twice.
//
// Thread safety: join(), leave() and recover_dead() make system calls; call them at start-up, exit, or
// on the service thread (recover_dead may run concurrently in several ranks: a slot is recovered by
// the one that wins a CAS on its owner word). try_reserve(), release(), held(), host_held() are
// lock-free, make no system call and never allocate: safe on the allocation path. After fork, the child
// calls detach_after_fork() (no shared write) so it never touches the parent's share.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sentinel::place {

class HostLedger {
 public:
  static constexpr uint32_t kSlots = 64;
  static constexpr size_t kPathMax = 256;

  constexpr HostLedger() = default;
  HostLedger(const HostLedger&) = delete;
  HostLedger& operator=(const HostLedger&) = delete;

  // The ledger file of job `job` on host `host`: "<dir>/sentinel-ledger-<16 hex digits>". False when it
  // does not fit in out[0..cap).
  static bool path_for(const char* dir, const char* job, const char* host, char* out, size_t cap) noexcept;

  // Opens the ledger at `path` (creating it, with `budget_bytes`, when it is not there), frees the slots
  // of dead owners and claims a slot for (pid, start_time). The ledger's budget wins over budget_bytes
  // unless no other live rank holds a slot (a stale ledger of an earlier job takes the new budget).
  // False with *why when the file cannot be made or used, or every slot is held by a live rank.
  bool join(const char* path, uint64_t budget_bytes, pid_t pid, uint64_t start_time, const char** why) noexcept;

  bool joined() const noexcept { return slot_ != nullptr; }
  // Reserves `bytes` of the host budget for this rank; false when they do not fit (or not joined).
  bool try_reserve(uint64_t bytes) noexcept;
  // Gives back bytes reserved earlier (clamped at what the slot holds).
  void release(uint64_t bytes) noexcept;

  // Frees the slots whose owner died (kill -9) and returns the bytes they held.
  uint64_t recover_dead() noexcept;
  // Gives the slot back (held bytes drop to 0) and unmaps: the rank's exit.
  void leave() noexcept;
  // In a forked child: forget the parent's slot without writing to the shared ledger.
  void detach_after_fork() noexcept;

  uint64_t budget() const noexcept;
  uint64_t held() const noexcept;       // this rank's bytes
  uint64_t host_held() const noexcept;  // every rank's bytes (a sum of slots)
  uint64_t peak_host_held() const noexcept;  // the highest sum a successful reservation saw
  uint32_t live_slots() const noexcept;
  uint32_t slot_index() const noexcept;

  struct Slot {
    std::atomic<uint64_t> owner;       // 0 = free; else owner_word(generation, state, pid)
    std::atomic<uint64_t> start_time;  // the owner's start time (process_start_time)
    std::atomic<uint64_t> held;
    std::atomic<uint64_t> last_generation;  // of the latest claim (<< 40), kept when the slot is freed
  };
  struct Memory {
    std::atomic<uint64_t> magic;
    std::atomic<uint64_t> budget;
    std::atomic<uint64_t> peak_held;
    std::atomic<uint64_t> recovered_slots;
    Slot slots[kSlots];
  };

 private:
  bool claim_slot(pid_t pid, uint64_t start_time, const char** why) noexcept;
  uint64_t sum_held() const noexcept;

  Memory* mem_ = nullptr;
  std::atomic<Slot*> slot_{nullptr};  // read by every allocating thread; cleared by leave() and after fork
};

}  // namespace sentinel::place
