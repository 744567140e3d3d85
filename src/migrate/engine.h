// The migration engine: moves whole extents [addr, len) of this process between NUMA nodes on one
// background thread, so the allocator hooks and the planner only enqueue and never wait.
//
// Work items are objects: an (object_id, generation) pair names one life of one object; the owner
// (the allocator) bumps the generation when it recycles the extent. A move is done with
// move_pages(2) in chunks of `chunk_pages` pages, checking every page's status:
//   - status == target node        moved (or already there)
//   - -ENOENT                      page not present (never touched): fine, counted as absent
//                                  (older kernels say -EFAULT for these; mincore tells them apart).
//                                  A page mincore calls resident was only hidden from the kernel for a
//                                  moment (khugepaged collapse, migration entry): retried like -EBUSY,
//                                  counted absent only after the retries (the zero page never moves)
//   - -EBUSY / -EAGAIN             retried up to `busy_retries` times, then counted as busy failures
//   - -ENOMEM                      target node full (kernel 6.1 fails the whole call with ENOMEM
//                                  instead; the engine then queries where the pages are): the move
//                                  stops; the pages are counted as ENOMEM failures
//   - anything else (EFAULT, ...)  counted as other failures; the move continues with the next pages
// A move that fails (any reason but cancellation) sends the pages it moved back to their original node
// (rollback_on_failure), so the object stays whole where it was, as the runtime's books say; only
// pages that will not go back stay moved (MoveResult::pages_moved).
// Large folios (THP, mTHP) migrate whole: move_pages on one page of a huge page moves all of it. A
// huge page that straddles the extent's boundary (allocators pack objects; khugepaged collapses
// across neighbouring objects of one VMA) would drag the neighbour's pages along, so before moving,
// the engine splits such folios (madvise(MADV_COLD) on the boundary page: the kernel splits a large
// folio the range covers only partly), and afterwards checks the pages outside the extent that share
// its huge-page-aligned regions: any that moved with it are sent back (counted in pages_restored);
// if that fails too, the move fails with kBusy rather than report a placement that is not true.
// After a complete move, mbind(policy) sets the range's policy to the target node (MPOL_PREFERRED by
// default, MPOL_BIND if configured) so pages not yet touched also fault in on the target node.
//
// Thread safety: every public method is thread-safe. enqueue() and cancel() never block on a system
// call and never allocate (they take a short spinlock that is never held across a system call),
// so they may be called from inside malloc/free. wait() blocks (futex). The Owner callback runs on
// the engine thread without any engine lock held; it may call enqueue/cancel/query but not wait or
// stop.
//
// Invariants: each queued or running move occupies one of `queue_capacity` slots, preallocated at
// construction. Finished slots are reused oldest-first, so a ticket's result stays queryable until
// about queue_capacity later moves have finished; after that query() returns kUnknown.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "migrate/channel_fit.h"
#include "os/spin_lock.h"

namespace sentinel::migrate {

enum class State : uint8_t { kUnknown, kQueued, kRunning, kDone, kFailed, kCancelled };
enum class FailReason : uint8_t {
  kNone,
  kNoMemory,     // target node full (-ENOMEM); object left on its original node
  kBusy,         // pages still busy after the retries
  kFault,        // pages not mapped (-EFAULT) or another per-page error
  kInvalidNode,  // move_pages refused the target node (ENODEV/EINVAL/EACCES): nothing moved
  kSyscall,      // move_pages itself failed for another reason
  kStopped,      // engine stopped before the move ran
  kRefused,      // the owner refused it when it was to start (Owner::on_move_starting): nothing moved
};
// Queue classes: a lower value runs first; within a class moves run first in, first out. Managed mode sends
// every planned move, evictions and prefetches alike, through kNormal: one channel in issue order, which is
// what the planner's cost model assumes (plan.h) and what the budget accounting relies on (an eviction
// issued before a prefetch frees its fast memory before the prefetch needs it).
enum class Priority : uint8_t { kHigh = 0, kNormal = 1, kBackground = 2 };
constexpr int kNumPriorities = 3;
enum class CancelResult : uint8_t { kCancelled, kRunning, kNotFound };
// Whether a large folio (a THP) may hold pages on both sides of the extent's boundaries. When it may,
// the engine checks the pages around the extent up to the huge-page boundaries before and after the
// move (engine_fringe.cc: up to 2 x 511 pages queried with move_pages, about 0.3 ms per move), so that
// a folio that straddles the boundary does not carry a neighbour along. A caller that lays its extents
// out so that no folio can straddle them (Sentinel's object heap: core/object_heap.h) says so.
enum class Neighbours : uint8_t { kMayShareLargeFolios, kShareNoLargeFolio };

const char* to_string(State s);
const char* to_string(FailReason r);

struct Ticket {
  uint64_t value = 0;  // 0 = no ticket (enqueue refused)
  bool valid() const { return value != 0; }
};

struct MoveResult {
  State state = State::kUnknown;
  FailReason reason = FailReason::kNone;
  int target_node = -1;
  uint64_t pages = 0;         // pages in the extent
  uint64_t pages_moved = 0;   // on the target node at the end (includes already-there pages)
  uint64_t pages_absent = 0;  // not present (-ENOENT)
  uint64_t pages_failed = 0;  // busy, ENOMEM or other errors
  bool rolled_back = false;   // failed: the moved pages were sent back (pages_moved: those that stayed)
  bool cancel_requested = false;
};

// Implemented by the allocator. Called on the engine thread after every move that ran (done,
// failed, or stopped early because cancel() was called while it was running). Not called for moves
// that cancel() dropped from the queue (cancel returned kCancelled).
class Owner {
 public:
  virtual ~Owner() = default;
  virtual void on_move_finished(uint64_t object_id, uint64_t generation, const MoveResult& result) = 0;
  // Called on the engine thread just before a move runs, after every move queued ahead of it has
  // finished. False: the move does not run; it finishes as kFailed, reason kRefused (on_move_finished
  // follows). The runtime takes fast memory for a prefetch here rather than when it queues one: the
  // evictions queued ahead of it have given theirs back by now.
  virtual bool on_move_starting(uint64_t object_id, uint64_t generation, int target_node) {
    (void)object_id;
    (void)generation;
    (void)target_node;
    return true;
  }
};

struct EngineConfig {
  int fast_node = 0;   // for the direction statistics
  int slow_node = -1;  // -1: single node, every move counts as "other"
  size_t queue_capacity = 1024;
  size_t chunk_pages = 1024;  // pages per move_pages call
  int busy_retries = 3;
  bool rollback_on_failure = true;  // a failed move sends the pages it moved back
  bool bind_policy = false;     // after the move: MPOL_BIND (true) or MPOL_PREFERRED (false)
  bool set_policy = true;       // apply the mbind policy after a complete move
  Owner* owner = nullptr;
};

// Cumulative counters (relaxed atomics; read with snapshot()).
struct StatsSnapshot {
  uint64_t enqueued = 0, queue_full = 0, cancelled_queued = 0, cancelled_running = 0;
  uint64_t moves_done = 0, moves_failed = 0;
  uint64_t refused_at_start = 0;  // moves the owner refused when they were to start (not in moves_failed)
  uint64_t objects_to_slow = 0, bytes_to_slow = 0;
  uint64_t objects_to_fast = 0, bytes_to_fast = 0;
  uint64_t objects_other = 0, bytes_other = 0;  // other targets, or no slow node configured
  uint64_t pages_busy = 0, pages_nomem = 0, pages_other_error = 0, pages_absent = 0;
  uint64_t rollbacks = 0;
  uint64_t pages_restored = 0;  // neighbours' pages a straddling huge page dragged along, sent back
  uint64_t move_ns = 0;  // time spent in move work
  uint64_t late = 0;     // reported by the owner through note_late()
  ChannelTotals channel;  // completed moves that moved pages: sizes and times, for fit_channel
};

class Engine {
 public:
  explicit Engine(const EngineConfig& config);
  ~Engine();  // stop(): queued moves are dropped
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts the thread (all signals blocked in it). False with *error if already started or failed.
  bool start(std::string* error);
  // Stops the thread after the running move; queued moves end as kCancelled/kStopped. Idempotent.
  void stop();
  bool running() const { return thread_started_.load(std::memory_order_acquire); }

  // Never blocks, never allocates. An invalid ticket (counted in queue_full) if no slot is free or
  // the engine is stopped. addr/len need not be page-aligned: whole pages covering them move.
  Ticket enqueue(uint64_t object_id, uint64_t generation, void* addr, size_t len, int target_node,
                 Priority priority, Neighbours neighbours = Neighbours::kMayShareLargeFolios);
  // A move reads kRunning until the owner's on_move_finished has returned; its end state after that.
  State query(Ticket t, MoveResult* result = nullptr) const;
  // Blocks until the move is finished or `timeout` passes; returns the state then. A finished move's
  // owner callback has returned by the time this sees its end.
  State wait(Ticket t, std::chrono::nanoseconds timeout, MoveResult* result = nullptr);
  // See Owner. kNotFound if no queued or running move has this (object_id, generation).
  CancelResult cancel(uint64_t object_id, uint64_t generation);

  void note_late(uint64_t n = 1) { stats_.late.fetch_add(n, std::memory_order_relaxed); }
  StatsSnapshot snapshot() const;
  size_t queued() const;
  const EngineConfig& config() const { return config_; }

 private:
  struct Slot;
  struct Stats {
    std::atomic<uint64_t> enqueued{0}, queue_full{0}, cancelled_queued{0}, cancelled_running{0};
    std::atomic<uint64_t> moves_done{0}, moves_failed{0}, refused_at_start{0};
    std::atomic<uint64_t> objects_to_slow{0}, bytes_to_slow{0}, objects_to_fast{0}, bytes_to_fast{0};
    std::atomic<uint64_t> objects_other{0}, bytes_other{0};
    std::atomic<uint64_t> pages_busy{0}, pages_nomem{0}, pages_other_error{0}, pages_absent{0};
    std::atomic<uint64_t> rollbacks{0}, pages_restored{0}, move_ns{0}, late{0};
    ChannelSums channel;
  };

  static void* thread_entry(void* self);
  void run();
  void execute(uint32_t slot_index);
  void finish(uint32_t slot_index, const MoveResult& r);
  void account(const MoveResult& r, uint64_t elapsed_ns);
  // engine_fringe.cc: keeping a move inside its extent when huge pages straddle its boundaries.
  size_t fringe_snapshot(uintptr_t start, uintptr_t end);
  void fringe_restore(size_t nfringe, uintptr_t start, uintptr_t end, int node, int origin, MoveResult* r);
  void wake_waiters();
  Slot* slot_for(Ticket t) const;
  void push_queue(uint32_t i);
  void unlink_queue(uint32_t i);
  uint32_t bucket_of(uint64_t object_id) const;
  void push_free(uint32_t i);

  EngineConfig config_;
  std::unique_ptr<Slot[]> slots_;
  mutable os::SpinLock lock_;  // held only for a few list operations, never across a system call
  // Guarded by lock_: intrusive FIFO lists of slot indices (kNil terminated).
  uint32_t head_[kNumPriorities], tail_[kNumPriorities];
  uint32_t free_head_, free_tail_;
  // Queued slots by object id (bucket heads, chained through Slot::hnext), so cancel() costs
  // O(moves queued for objects in the same bucket), not O(queue length). Guarded by lock_.
  std::unique_ptr<uint32_t[]> buckets_;
  uint32_t bucket_mask_ = 0;
  size_t queued_ = 0;
  uint32_t running_ = UINT32_MAX;
  bool accepting_ = false;
  // Futex words: doorbell_ wakes the engine thread, completions_ wakes wait().
  std::atomic<uint32_t> doorbell_{0};
  std::atomic<uint32_t> completions_{0};
  std::atomic<uint32_t> waiters_{0};           // threads inside wait()
  std::atomic<bool> worker_sleeping_{false};   // engine thread is (about to be) in futex_wait
  std::atomic<bool> stop_{false};
  std::atomic<bool> thread_started_{false};
  unsigned long thread_ = 0;
  // Engine-thread-only buffers for move_pages (allocated once).
  std::unique_ptr<void*[]> pages_;
  std::unique_ptr<int[]> nodes_, status_, origin_;
  std::unique_ptr<unsigned char[]> incore_;  // mincore vector
  // The fringe: pages outside the running extent within its huge-page-aligned boundary regions
  // (at most 2 * (huge_ / page - 1)), with their node before and after the move.
  size_t huge_ = 0;  // PMD huge page size (bytes)
  std::unique_ptr<void*[]> fringe_pages_;
  std::unique_ptr<int[]> fringe_before_, fringe_after_;
  Stats stats_;
};

}  // namespace sentinel::migrate
