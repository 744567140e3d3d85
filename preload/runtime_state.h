// The runtime's process-wide state. One constant-initialised instance (no dynamic construction, no
// destructor that could run before the program's last free()).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "core/call_site.h"
#include "core/config.h"
#include "core/deferred_log.h"
#include "core/event_ring.h"
#include "core/object_heap.h"
#include "core/spin_lock.h"
#include "core/step_tracker.h"
#include "manage/birth_table.h"
#include "place/budget_placer.h"

namespace sentinel::rt {

enum class Phase : int { kUninitialised, kInitialising, kPassthrough, kActive };

struct Counters {
  std::atomic<uint64_t> objects_tracked{0};   // objects ever allocated
  std::atomic<uint64_t> bytes_tracked{0};
  std::atomic<uint64_t> objects_freed{0};
  std::atomic<uint64_t> live_objects{0};
  std::atomic<uint64_t> live_bytes{0};
  std::atomic<uint64_t> peak_live_bytes{0};
  std::atomic<uint64_t> heap_full_fallbacks{0};  // large requests sent to the system allocator
  std::atomic<uint64_t> invalid_frees{0};        // interior or repeated free of an object pointer
  std::atomic<uint64_t> inplace_reallocs{0};
  std::atomic<uint64_t> step_marks{0};
  std::atomic<uint64_t> plan_deviations{0};  // allocations where a managed step left its plan
  std::atomic<uint64_t> planned_fast_forced_slow{0};  // the plan said fast, the budget had no room
  std::atomic<uint64_t> unplanned_births{0};      // births under a plan that did not know their tag
  std::atomic<uint64_t> unplanned_fast_bytes{0};  // their bytes born on the fast node (first-touch)
  std::atomic<uint64_t> forked_children{0};  // fork() without exec: children that ran as pass-through
  // Extent bytes of objects born into extents with no resident pages (fresh, returned, or taken from the
  // other pool): what the kernel faults in and zeroes when the program touches them, by pool.
  std::atomic<uint64_t> empty_birth_bytes[2] = {};
  // Cached slow extents of a larger class taken by a smaller birth under a budget: bytes of their pages past
  // its class, kept (runtime.cc, place_extent), and dropped when such an object was moved to the fast node
  // (migration.cc, on_move_starting). Parked fast ones' once State::drop_parked_tails is set, dropped.
  std::atomic<uint64_t> slow_tails_kept_bytes{0};
  std::atomic<uint64_t> slow_tails_dropped_bytes{0};
  std::atomic<uint64_t> parked_tails_dropped_bytes{0};
  // Of parked_tails_dropped_bytes: dropped in a dry run's books only, their pages kept (drop_parked_tail).
  std::atomic<uint64_t> parked_tails_kept_bytes{0};
  // Fast births under a budget whose empty pages were faulted in with one call (runtime.cc, populate_birth).
  std::atomic<uint64_t> fast_births_populated_bytes{0};
  // Of empty_birth_bytes: births into extents whose pages a dry run kept after the books returned them
  // (ObjectHeap::trim_cached with keep_pages; another pool's extent, ObjectHeap::keep_pages_across_pools):
  // faults a tiered machine takes and the dry run only books.
  std::atomic<uint64_t> kept_birth_bytes{0};
  // Time the program's threads spent turning fast pages over under a budget, on the step clock: parked
  // pages dropped for room or past a smaller object's class, and fast births' pages faulted in
  // (populate_birth). What the planner's fault_ns_per_byte stands for, measured in this process.
  std::atomic<uint64_t> fast_turnover_ns{0};
};

struct State {
  std::atomic<Phase> phase{Phase::kUninitialised};
  // Requests at or above this size are objects; SIZE_MAX while Sentinel is not active, so the check on
  // the hot path is one compare.
  std::atomic<size_t> threshold{~size_t{0}};
  Config config;
  pid_t init_pid = 0;
  int64_t rank = -1;  // RANK, else LOCAL_RANK; -1 outside a launched job
  uint64_t start_realtime_ns = 0;  // CLOCK_REALTIME at start: files of the job older than this are stale
  // The job this process is a rank of (docs/distributed.md): SENTINEL_JOB or MASTER_ADDR:MASTER_PORT;
  // empty when it is not part of one.
  char job_key[160] = {};
  // Managed mode, profile once: the profile this host's ranks share, and whether this rank makes it
  // (LOCAL_RANK 0) or waits for it. Empty when the process is not a rank of a job.
  char shared_profile[256] = {};
  bool profile_leader = false;
  uint64_t start_ns = 0;
  char topology[256] = {};  // why these nodes (or why no placement), for the stats

  ObjectHeap heap;
  place::BudgetPlacer placer;
  place::HostLedger ledger;  // the host budget shared with the job's other ranks, when joined
  char ledger_path[place::HostLedger::kPathMax] = {};
  CallSiteHasher sites;
  Counters counters;
  DeferredLog log;

  // The step clock (and the log its search reads, core/step_tracker.h): serialised by clock_lock, which
  // guards nothing else but the birth decision, the order of object events and the announcements, all of
  // them a few dozen instructions. The search for the step structure runs on the service thread.
  SpinLock clock_lock;
  uint64_t clock_ticks = 0;  // object allocation events so far (ObjectEvent::clock)
  // While the emulated PMU's ring is registered: its step-clock word (sampler/emulated_pmu.h). Every
  // allocation event stores its tick there while its step is in [pmu_window_first_step,
  // pmu_window_end_step), and 0 otherwise; the plugin samples only while the word is not 0, so the
  // profiled steps are sampled from their first event exactly, however late the service thread
  // gets to them. Set and cleared by the profiler under clock_lock, so no allocation writes to the
  // word once it is cleared and the ring can be unmapped.
  uint64_t* step_clock_mirror = nullptr;
  int64_t pmu_window_first_step = -1;
  int64_t pmu_window_end_step = -1;
  StepTracker steps;
  bool announced_period = false;
  uint64_t announced_relocks = 0;

  // Managed mode: the tier the plan wants each new object born on (read under clock_lock).
  manage::BirthGate births;

  // Object events for the service thread (profile and managed mode), reserved under clock_lock.
  std::atomic<bool> events_enabled{false};
  EventRing events;
  std::atomic<uint32_t> service_wake{0};  // futex word: bumped to wake the service thread
  // Managed mode, set by the service thread: a plan is in force and no move waits for room, so an event at
  // which the plan has nothing to do (BirthDecision::quiet) need not wake it (runtime.cc, read_clock).
  std::atomic<bool> quiet_events_wait{false};
  uint32_t quiet_unannounced = 0;  // quiet events since the last wake-up; guarded by clock_lock

  // Under a budget a fast birth in a parked extent of a larger class keeps the extent's pages past its class
  // until the budget first turns a planned-fast birth away; from then on it drops them (runtime.cc,
  // place_extent). Never set back: the cost model's fast pool does the same (plan/fast_pool_model.h).
  std::atomic<bool> drop_parked_tails{false};
};

extern constinit State g_state;

uint64_t now_ns() noexcept;
// What the step clock says, read under the clock lock (the rule for every reader of the clock).
StepSummary step_summary() noexcept;
// Returns to the kernel the pages of `r`'s extent past its first `own` bytes (its charge: past the object's
// usable size); false when the kernel refused (runtime.cc).
bool drop_extent_tail(const ObjectRecord& r, uint64_t own) noexcept;

}  // namespace sentinel::rt
