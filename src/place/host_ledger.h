// HostLedger: one fast-memory budget shared by the processes (ranks) of a job on one host, through a
// small file in shared memory (/dev/shm/sentinel-ledger2-<hash of job and host>). Protocol, names and
// failure cases: docs/distributed.md.
//
// Layout: a header (magic, version, the budget, `total`: the fast bytes of all ranks) and kSlots slots.
// A rank owns one slot: an owner word (claim generation, state, pid), the owner's start time, and
// `held`, the fast bytes the rank holds. `held` is there for recovery: when a rank dies, its `held` is
// what the survivors take out of `total`.
//
// Reservation (try_reserve) is O(1), optimistic and lock-free: add the bytes to `total` (one fetch_add
// that returns the host's sum), take them back and fail if that sum exceeds the budget, else add them
// to the own slot's `held`. Release does the opposite in the opposite order: `held` first, then
// `total`. All of these are seq_cst read-modify-writes of one word each.
//
// Invariants:
//  (B) Budget: `total` never counts less than the bytes of successful reservations not yet released,
//      so those never sum to more than the budget (every reservation's fetch_add sees every earlier
//      one's addition in the single order of RMWs on `total`). Races can only make a reservation fail
//      that would have fitted (the object then goes slow).
//  (S) Slot: a slot's `held` never exceeds what its owner has added to `total` and not taken out:
//      `held` grows only after `total` did, and shrinks before it does. The difference is the owner's
//      reservations and releases in flight (at most one per thread).
//  (R) Recovery takes a dead owner's `held` out of `total` exactly once: only the recoverer whose CAS
//      moves the owner word to "recovering" touches the slot, and it takes `held` with an exchange to
//      0, so a second recoverer finishing an interrupted recovery takes out nothing twice.
// A rank killed between its two updates (or a recoverer killed between its exchange and its
// subtraction) leaves by (S) a few bytes counted in `total` that no slot holds: stranded bytes, on
// the safe side of (B), at most one extent per thread in flight. The ordering is what makes that the
// safe side: the opposite order would take out more than the dead rank added, and the ranks could
// overshoot the budget. Stranded bytes are given back when a rank joins a ledger in which no other
// slot is owned (a fresh job): it resets `total` to 0 with a CAS from the value it read before
// checking the slots, so a rank that joins at the same moment (and whose updates change `total`)
// makes the reset fail instead of being undone by it. The reset also waits until every process that
// left a slot has exited (`left_pid`, `left_start`): a thread of a rank that is leaving may still be
// between its two updates, and its second update must not land after the reset.
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

#include "core/status.h"

namespace sentinel::place {

class HostLedger {
 public:
  static constexpr uint32_t kSlots = 64;
  static constexpr size_t kPathMax = 256;

  constexpr HostLedger() = default;
  HostLedger(const HostLedger&) = delete;
  HostLedger& operator=(const HostLedger&) = delete;

  // The ledger file of job `job` on host `host`: "<dir>/sentinel-ledger2-<16 hex digits>" (2: the
  // layout version). False when it does not fit in out[0..cap).
  static bool path_for(const char* dir, const char* job, const char* host, char* out, size_t cap) noexcept;

  // Opens the ledger at `path` (creating it, with `budget_bytes`, when it is not there), frees the slots
  // of dead owners and claims a slot for (pid, start_time). The ledger's budget wins over budget_bytes
  // unless no other live rank holds a slot (a stale ledger of an earlier job takes the new budget).
  // A failure (static text, with the errno where a system call said why) when the file cannot be made or
  // used, or every slot is held by a live rank.
  Status join(const char* path, uint64_t budget_bytes, pid_t pid, uint64_t start_time) noexcept;

  bool joined() const noexcept { return slot_ != nullptr; }
  // Reserves `bytes` of the host budget for this rank; false when they do not fit (or not joined).
  bool try_reserve(uint64_t bytes) noexcept;
  // Counts bytes that are in fast memory already, whether or not they fit (a bind the kernel refused).
  void force_reserve(uint64_t bytes) noexcept;
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
  uint64_t host_held() const noexcept;  // every rank's bytes (`total`, with any in flight or stranded)
  uint64_t peak_host_held() const noexcept;  // the highest sum a successful reservation saw
  uint32_t live_slots() const noexcept;
  uint32_t slot_index() const noexcept;

  // A cache line each: every rank writes its own slot and `total` on each reservation.
  struct alignas(64) Slot {
    std::atomic<uint64_t> owner;       // 0 = free; else owner_word(generation, state, pid)
    std::atomic<uint64_t> start_time;  // the owner's start time (process_start_time)
    std::atomic<uint64_t> held;
    std::atomic<uint64_t> last_generation;  // of the latest claim (<< 40), kept when the slot is freed
    std::atomic<uint64_t> left_pid;    // the process that last freed the slot with leave(); 0: none alive
    std::atomic<uint64_t> left_start;  // its start time
  };
  struct Memory {
    std::atomic<uint64_t> magic;
    std::atomic<uint64_t> budget;
    std::atomic<uint64_t> peak_held;
    std::atomic<uint64_t> recovered_slots;
    alignas(64) std::atomic<uint64_t> total;  // the fast bytes of all ranks; see the invariants above
    Slot slots[kSlots];
  };

 private:
  Slot* claim_slot(pid_t pid, uint64_t start_time, const char** why) noexcept;
  // True when no slot but `own` is owned; *quiet when, besides, no process that left a slot still runs.
  bool alone_in_ledger(const Slot* own, bool* quiet) const noexcept;
  // Takes bytes out of `total` that the caller has just taken out of a slot.
  void take_out_of_total(uint64_t bytes) noexcept;

  Memory* mem_ = nullptr;
  std::atomic<Slot*> slot_{nullptr};  // read by every allocating thread; cleared by leave() and after fork
};

}  // namespace sentinel::place
