#include "runtime.h"

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "core/hash.h"
#include "core/text_buf.h"
#include "os/futex.h"
#include "os/dry_run.h"
#include "os/measure_clock.h"
#include "os/os.h"
#include "os/resident.h"
#include "migration.h"
#include "object_path.h"
#include "profiler.h"
#include "real_malloc.h"
#include "runtime_state.h"
#include "service.h"
#include "vocabulary.h"

namespace sentinel::rt {
namespace {

// Sentinel's own frames on an object allocation (capture, alloc_object, the rt:: entry point and, unless
// the compiler turned it into a jump, the exported symbol) are skipped by address: the call-site hasher
// skips every innermost frame inside libsentinel.so (set up in initialise()).
constexpr uint32_t kOwnFrames = 0;
// Freed extents kept resident for reuse, at least: programs that cycle through many sizes (each size
// class has its own cache) would otherwise return and re-fault memory at every turn. Measured with
// bench/preload (large_touch: 2.35x glibc's time with 64 MiB, 0.07x with 256 MiB).
constexpr uint64_t kMinCacheBytes = 256ull << 20;
// While a plan runs, allocation events at which it has nothing to do do not wake the service thread (a
// futex wake and a switch to that thread per allocation was most of managed mode's cost per event in the
// two-node guest: docs/results.md); the next event that wakes it takes them along, in order, and at most
// this many wait.
constexpr uint32_t kQuietEventsPerWake = 32;
// Events the step search looks at per object where it runs on the allocating thread (service.h).
constexpr uint64_t kInlineSearchEvents = 2;

// Read after the event is filled. The fence pairs with the service thread's, which withdraws the flag
// before it looks at the ring once more (service.cc): either this sees the flag withdrawn and wakes it, or
// that look finds the event.
inline bool quiet_events_may_wait() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return g_state.quiet_events_wait.load(std::memory_order_relaxed);
}

inline bool is_power_of_two(size_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

void update_peak_impl(uint64_t live) noexcept {
  uint64_t peak = g_state.counters.peak_live_bytes.load(std::memory_order_relaxed);
  while (live > peak) {
    if (g_state.counters.peak_live_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
      // The heap may stay resident up to the peak plus one more peak's worth (at least kMinCacheBytes): a
      // training step frees and re-allocates about a peak every step, and re-faulting it each step costs
      // more than it saves. That is the bound a cache of one peak gave at the peak; bounding the whole heap
      // instead keeps what a step reuses when its live set falls far below the peak (densenet121 dropped
      // and faulted in ~0.3 GB per step under the cache-only limit: docs/benchmarks.md).
      g_state.heap.set_resident_limit(live + (live > kMinCacheBytes ? live : kMinCacheBytes));
      return;
    }
  }
}

void announce_period(uint32_t period, bool explicit_marks, uint64_t relocks) noexcept {
  char buf[DeferredLog::kMessageBytes];
  TextBuf msg(buf, sizeof buf);
  if (explicit_marks) {
    msg.put("steps marked by the program (sentinel_step_begin)");
  } else {
    msg.put("training step detected: ").put(uint64_t{period}).put(" object allocations per step");
    if (relocks > 0) msg.put(" (re-detected, ").put(relocks).put(" time(s))");
  }
  g_state.log.push(LogLevel::kInfo, buf);
}

// What the step clock says about a new object, read under the clock lock.
struct ClockReading {
  uint32_t occurrence = 0;
  uint32_t event = 0;
  uint32_t period = 0;
  uint64_t tag = 0;
  int64_t step = -1;
  uint64_t relocks = 0;
  place::Want want = place::Want::kAny;
  uint64_t clock = 0;                      // the step clock's tick of this allocation event
  uint64_t ticket = EventRing::kNoTicket;  // reserved object event, filled once the extent exists
  bool quiet = false;                      // the event may wait for the next wake-up (kQuietEventsPerWake)
  bool unplanned = false;                  // under a plan that does not know its tag (first-touch)
  bool search_due = false;                 // the step search has a batch of events to look at
  bool announce = false;
  bool explicit_marks = false;
};

// Advances the step clock by one allocation event: the object's tag, its place in the step and, when a
// plan is in force, the tier the plan wants it born on. Reserves its object event, so events reach the
// service thread in clock order even though the extent is made after the lock is released.
ClockReading read_clock(State& s, uint64_t site, uint64_t size) noexcept {
  ClockReading c;
  const uint64_t live_objects = s.counters.live_objects.load(std::memory_order_relaxed);
  const uint64_t live_bytes = s.counters.live_bytes.load(std::memory_order_relaxed);
  const uint32_t small_before = t_thread.small_requests;
  t_thread.small_requests = 0;
  SpinGuard clock(s.clock_lock);
  if (s.steps.observe(site, static_cast<uint32_t>(live_objects), live_bytes, size, small_before, &c.search_due)) {
    s.placer.update_peak(s.counters.peak_live_bytes.load(std::memory_order_relaxed));
  }
  const StepClock& k = s.steps.clock();
  c.occurrence = s.steps.next_occurrence(site);
  c.tag = make_tag(site, c.occurrence);
  // Atomic: the software sampler's fault handler reads it on any thread (its touches' clock).
  c.clock = __atomic_add_fetch(&s.clock_ticks, 1, __ATOMIC_RELAXED);
  c.step = k.step_index();
  c.event = k.event_in_step();
  c.period = k.period();
  c.relocks = k.relocks();
  if (s.step_clock_mirror != nullptr) {
    // The emulated PMU samples while the word is not 0: from the first event of the profiler's window
    // to the first event after it, exactly (runtime_state.h).
    const bool sampling = c.step >= s.pmu_window_first_step && c.step < s.pmu_window_end_step;
    __atomic_store_n(s.step_clock_mirror, sampling ? c.clock : 0, __ATOMIC_RELAXED);
  }
  const manage::BirthDecision birth = s.births.decide(c.step, c.event, c.period, c.tag);
  c.want = want_of(birth.want);
  if (birth.deviated_now) s.counters.plan_deviations.fetch_add(1, std::memory_order_relaxed);
  c.unplanned = birth.unknown_tag;
  c.quiet = birth.quiet && ++s.quiet_unannounced < kQuietEventsPerWake;
  if (!c.quiet) s.quiet_unannounced = 0;
  if (s.events_enabled.load(std::memory_order_relaxed)) c.ticket = s.events.reserve();
  if (k.locked() != s.announced_period || k.relocks() != s.announced_relocks) {
    s.announced_period = k.locked();
    s.announced_relocks = k.relocks();
    c.announce = s.announced_period;
    c.explicit_marks = k.explicit_marks();
  }
  return c;
}

// Adds the time of the enclosing scope to fast_turnover_ns: page work under a budget that the program's
// thread waits for (what the planner charges as fault_ns_per_byte).
class TurnoverTimer {
 public:
  explicit TurnoverTimer(State& s) noexcept : s_(s), t0_(os::measure_ns()) {}
  ~TurnoverTimer() { s_.counters.fast_turnover_ns.fetch_add(os::measure_ns() - t0_, std::memory_order_relaxed); }
  TurnoverTimer(const TurnoverTimer&) = delete;
  TurnoverTimer& operator=(const TurnoverTimer&) = delete;

 private:
  State& s_;
  uint64_t t0_;
};

// A parked extent's pages past the class of the object that took it leave (pages first, then the budget),
// so the object counts what it would count in an extent of its class. If the kernel refuses the drop the
// object keeps (and counts) the whole extent. A dry run drops them in the books only, as it returns parked
// pages for room (make_fast_room): the budget stops counting them at once, the pages stay mapped, and the
// life that next covers them books the faults a tiered machine takes there (place_extent). Dropped for
// real, the next birth of the extent's class faulted them in again: resnet50 at batch 16, 128 px, dry run
// at 20%, 135 MB a step, and 1.056x of plain against 0.996x with them kept (docs/results.md).
void drop_parked_tail(State& s, ObjectRecord& r, uint64_t own) noexcept {
  TurnoverTimer timed(s);
  const uint64_t tail = r.charge - own;
  if (s.config.dry_run) {
    r.kept_tail_bytes = tail;
    s.counters.parked_tails_kept_bytes.fetch_add(tail, std::memory_order_relaxed);
  } else if (!drop_extent_tail(r, own)) {
    return;
  }
  s.placer.release(place::kFastPool, tail);
  s.counters.parked_tails_dropped_bytes.fetch_add(tail, std::memory_order_relaxed);
  r.charge = own;
}

// Placement and extent for a new object of `request` bytes (>= size): a parked fast extent when the budget
// keeps one of its class (or of a larger one up to kParkedFitFactor times its size, core/size_class.h), else
// the placer's choice. kNoSlot when the heap is full (the placer's reservation is undone). *kept: a dry run kept
// the extent's pages though the books had returned them (make_fast_room); the birth books their faults.
uint32_t place_extent(State& s, const ObjectRequest& q, uint64_t request, place::Want want, place::Decision* d,
                      bool* fresh_zero, bool* kept) noexcept {
  const uint64_t extent = place::extent_bytes_for(request);
  const bool parking = s.placer.parks_freed_extents(place::kFastPool);
  // A parked fast extent of this class, or of a larger one up to twice its size: its pages are resident
  // and its bytes already in the budget. With its own class only, a full budget dropped one class's
  // parked pages to fault another's in, every step (docs/results.md, "Not done here": cnn-act 1,649
  // minor faults per managed step at 20%, 934 with the larger classes, and fewer births sent slow).
  // A larger extent keeps all its pages and its whole charge (the object may use them:
  // malloc_usable_size), so the next birth of the extent's own class finds them: dropping the pages past
  // the object's class, the larger class faulted them in again at its next birth, as 4 KiB pages where a
  // huge page had been split at the cut (densenet121, batch 16, 128 px, dry run at a 100% budget: 19,000
  // faults a step and 1.17x of plain, 963 and 1.01x with the pages kept). But the whole charge holds budget
  // the plan gave other objects: at 20% the budget turned 170 planned-fast births a step away (plan
  // fidelity 0.88). So the pages are kept until the budget first turns a planned-fast birth away, and
  // dropped from then on (State::drop_parked_tails; docs/placement.md).
  const uint64_t parked_fit = kParkedFitFactor * extent;
  if (parking && want != place::Want::kSlow && !q.zero_first) {
    // (A miss looks at the cache lists without the heap's lock.)
    const uint32_t slot = s.heap.take_resident(request, q.align, place::kFastPool, parked_fit, extent);
    if (slot != kNoSlot) {
      *fresh_zero = false;
      ObjectRecord& r = s.heap.record(slot);
      *d = s.placer.reuse_parked_fast(r.charge);
      if (r.charge > extent && s.drop_parked_tails.load(std::memory_order_relaxed)) drop_parked_tail(s, r, extent);
      return slot;
    }
  }
  if (parking && want != place::Want::kSlow) make_fast_room(extent);
  *d = s.placer.choose(extent, want);
  if (want == place::Want::kFast && d->forced_slow) {
    s.counters.planned_fast_forced_slow.fetch_add(1, std::memory_order_relaxed);
    // Read first: a full budget turns many births away, and a store each time would bounce the line
    // between the program's threads.
    if (!s.drop_parked_tails.load(std::memory_order_relaxed)) s.drop_parked_tails.store(true, std::memory_order_relaxed);
  }
  // Without a budget, a cached extent of a larger class (up to kParkedFitFactor times this one's) whose
  // pages are resident before a carve: a step whose objects change classes from phase to phase otherwise
  // carves extents for the new classes while the old ones sit cached, and the heap's peak holds both
  // (densenet121, track mode: 1,039 MiB resident at a 735 MiB object peak; 897 MiB this way, with fewer page
  // faults). Its tail stays resident and uncounted, beyond the object's usable size (its charge). Under a
  // budget that holds for a slow extent too: the slow pool's books count the object's class, and the tail
  // is dropped only if the object is moved to the fast node, where the budget would not see it
  // (preload/migration.cc, on_move_starting). Dropped at the birth, the next birth of the larger class
  // faulted it in again (densenet121, dry run at 20%: 3.2 GB of slow tails in 16 steps).
  if (!q.zero_first && (!parking || d->pool == place::kSlowPool)) {
    const uint32_t slot = s.heap.take_resident(request, q.align, d->pool, parked_fit, 0);
    if (slot != kNoSlot) {
      *fresh_zero = false;
      ObjectRecord& r = s.heap.record(slot);
      if (parking && r.extent_bytes > extent) {
        r.slow_tail = true;
        s.counters.slow_tails_kept_bytes.fetch_add(r.extent_bytes - extent, std::memory_order_relaxed);
      }
      r.charge = extent;  // what choose() reserved for it
      return slot;
    }
  }
  uint8_t taken_from = kMaxPools;
  bool taken_resident = false;
  const uint32_t slot =
      s.heap.allocate(request, q.align, d->pool, fresh_zero, q.zero_first, &taken_from, &taken_resident, kept);
  if (slot == kNoSlot) {
    s.placer.release(d->pool, extent);
    return kNoSlot;
  }
  ObjectRecord& r = s.heap.record(slot);
  const uint64_t parked_charge = r.charge;  // what the extent's last life left counted (if it was parked)
  r.charge = r.extent_bytes;
  if (r.kept_tail_bytes != 0) {
    // A tail a dry run kept (drop_parked_tail): where this life's pages reach into it, a tiered machine
    // faults them in; booked here. (Returned or kept whole since, the extent's faults are counted as such.)
    const uint64_t own = pages_for(request) * kPageSize;
    if (!*fresh_zero && !*kept && own > parked_charge) {
      s.counters.kept_birth_bytes.fetch_add(std::min(own - parked_charge, r.kept_tail_bytes), std::memory_order_relaxed);
    }
    r.kept_tail_bytes = 0;
  }
  // An extent the other pool had cached (object_heap.h): if it was a parked fast one, its pages are gone
  // now and its bytes leave the budget.
  if (taken_from != kMaxPools && taken_resident && s.placer.parks_freed_extents(taken_from)) {
    s.placer.unpark_fast(parked_charge, false);
  }
  // A parked extent freed concurrently may have come out of the cache after all: the new reservation
  // counts it now, so its parked bytes leave the budget. (Kept pages left it when the books returned them.)
  if (parking && d->pool == place::kFastPool && !*fresh_zero && !*kept) s.placer.unpark_fast(parked_charge, false);
  return slot;
}

// Gives the extent of a new object the decision's node (`bound`: its node + 1, 0 for a fresh extent).
// True when its old contents were dropped (it reads as zeros). When the kernel refuses for a passing
// reason (out of memory or mappings, a failed drop), the books follow the pages: a recycled extent stays
// on its old node, a fresh one faults in on the node of the CPU that touches it first, the fast node
// (the slow tier has no CPUs). Counting the object where the placer chose would hide fast pages from
// the budget, or tell the migration engine that a slow object is fast. EINVAL says the kernel has no
// such node (a topology given by SENTINEL_SYSFS_ROOT, as the one-node tests do): every bind to it fails
// alike, and the books keep the placer's choice (bind_failures counts them). With `kept_pages` (a dry run's
// kept pages: the heap's *kept) a recycled extent keeps them: it is bound, and the book puts its pages on
// the new node as if they had been dropped and faulted in there (os/dry_run.h), the faults the birth books.
// Dropping them cost vit_b_16 at batch 16, 128 px, 12,000 real faults a dry-run step (docs/results.md).
bool bind_extent(State& s, ObjectRecord& r, uint16_t bound, const place::Decision& d, bool kept_pages) noexcept {
  std::string_view why;
  void* start = reinterpret_cast<void*>(r.start);
  bool dropped = false;
  int err = 0;
  bool ok;
  if (bound == 0 || kept_pages) {
    ok = s.placer.bind(start, r.extent_bytes, d, &why, &err);
    if (ok && bound != 0) os::dry_run_book_refault(start, r.extent_bytes);
  } else {
    ok = s.placer.rebind(start, r.extent_bytes, d, &why, &dropped, &err);
  }
  if (ok) {
    r.bound_node_plus1.store(static_cast<uint16_t>(d.node + 1), std::memory_order_relaxed);
    return dropped;
  }
  if (err == EINVAL) return false;
  const uint8_t actual = s.placer.pool_of_node(bound == 0 ? s.placer.fast_node() : bound - 1);
  if (actual != place::kNoPool && actual != d.pool) {
    s.placer.rehome(d.pool, actual, r.charge);
    r.pool.store(actual, std::memory_order_relaxed);
  }
  return false;
}

// Faults in the pages of a fast birth under a budget whose extent has none (fresh, trimmed or returned)
// with one call instead of one trap per page when the program first writes them. Under a budget the fast
// pool's pages turn over every step (a birth whose class has no parked extent faults its pages in:
// densenet121, dry run at 20%, about 350 MB and 46,000 faults a step); populating 64 MiB of 4 KiB pages
// here takes 11.3 ms against 19.2 ms by touching them (huge pages: 3.3 against 3.5 ms). Only the object's
// own pages: a tensor is written whole soon after its birth, its extent's tail past its size may never be.
// Without a budget a fresh extent is carved once and kept, so its faults are not worth the call. A kernel
// without MADV_POPULATE_WRITE (before 5.14) refuses once and is not asked again; any other refusal leaves
// the pages to fault in as before.
void populate_birth(State& s, const ObjectRecord& r, uint64_t size) noexcept {
  static std::atomic<bool> unsupported{false};
  if (r.pool.load(std::memory_order_relaxed) != place::kFastPool || !s.placer.parks_freed_extents(place::kFastPool) ||
      unsupported.load(std::memory_order_relaxed)) {
    return;
  }
  const uint64_t bytes = pages_for(size) * kPageSize;
  TurnoverTimer timed(s);
  const int saved_errno = errno;  // the program's malloc() succeeds: its errno stays
  if (os::make_resident(reinterpret_cast<void*>(r.start), bytes)) {
    s.counters.fast_births_populated_bytes.fetch_add(bytes, std::memory_order_relaxed);
  } else if (errno == EINVAL) {
    unsupported.store(true, std::memory_order_relaxed);
  }
  errno = saved_errno;
}

}  // namespace

// (runtime.h) A parked fast extent's tail once the budget is short (place_extent), a slow extent's when
// its object is moved to the fast node (preload/migration.cc).
bool drop_extent_tail(const ObjectRecord& r, uint64_t own) noexcept {
  // A huge page across the cut is split first (MADV_COLD on its first dropped page, as the migration
  // engine splits one: migrate/engine_fringe.cc), so the dropped part is freed now rather than when the
  // kernel splits a partly mapped huge page under memory pressure.
  if (r.extent_bytes >= kHugePageSize && own % kHugePageSize != 0) {
    os::madvise(reinterpret_cast<void*>(r.start + own), kPageSize, MADV_COLD);
  }
  return os::madvise(reinterpret_cast<void*>(r.start + own), r.extent_bytes - own, MADV_DONTNEED) == 0;
}

thread_local ThreadState t_thread __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) void* alloc_object(const ObjectRequest& q, bool* zeroed) noexcept {
  ReentrancyGuard guard;
  State& s = g_state;
  const uint64_t site = q.site != 0 ? q.site : s.sites.capture(s.config.stack_depth, kOwnFrames);
  const ClockReading c = read_clock(s, site, q.size);
  // The event's time (the step clock's time, os/measure_clock.h) is read by the profiler (phase
  // durations); without events nobody reads one.
  const uint64_t at_ns = c.ticket != EventRing::kNoTicket ? os::measure_ns() : 0;
  const uint64_t live_bytes = s.counters.live_bytes.load(std::memory_order_relaxed);

  bool fresh_zero = false;
  bool kept = false;
  place::Decision d;
  const uint32_t slot = place_extent(s, q, q.reserve > q.size ? q.reserve : q.size, c.want, &d, &fresh_zero, &kept);
  if (slot == kNoSlot) {
    s.counters.heap_full_fallbacks.fetch_add(1, std::memory_order_relaxed);
    ObjectEvent aborted{};
    aborted.kind = ObjectEventKind::kAborted;
    s.events.fill(c.ticket, aborted);
    if (c.ticket != EventRing::kNoTicket) wake_service();
    return nullptr;
  }
  ObjectRecord& r = s.heap.record(slot);
  if (c.unplanned) {
    s.counters.unplanned_births.fetch_add(1, std::memory_order_relaxed);
    if (d.pool == place::kFastPool) s.counters.unplanned_fast_bytes.fetch_add(r.charge, std::memory_order_relaxed);
  }
  const uint16_t bound = r.bound_node_plus1.load(std::memory_order_relaxed);
  if (s.placer.enabled() && bound != d.node + 1 && bind_extent(s, r, bound, d, kept)) fresh_zero = true;
  if (fresh_zero || kept) {
    // Kept pages (a dry run) are booked as a tiered machine would take them: faulted in, at the birth.
    const uint8_t pool = r.pool.load(std::memory_order_relaxed);
    if (pool < 2) s.counters.empty_birth_bytes[pool].fetch_add(r.charge, std::memory_order_relaxed);
    if (fresh_zero) {
      populate_birth(s, r, q.size);
    } else {
      s.counters.kept_birth_bytes.fetch_add(r.charge, std::memory_order_relaxed);
    }
  }
  if (zeroed != nullptr) *zeroed = fresh_zero;

  r.size = q.size;
  r.site = site;
  r.occurrence = c.occurrence;
  r.tag = c.tag;
  // Its charge, pool and node are final: a move may claim it now (a thread that holds a pointer of the
  // extent's earlier life can ask for one before this object is returned).
  s.heap.end_birth(slot);
  expose_object(r);
  profiler_on_alloc(slot, r.start, q.size, c.step);
  s.events.fill(c.ticket, ObjectEvent{ObjectEventKind::kAlloc, r.pool.load(std::memory_order_relaxed), slot,
                                      r.generation.load(std::memory_order_relaxed), c.occurrence, c.event, c.period,
                                      c.step, c.relocks, c.tag, site, q.size, r.extent_bytes, at_ns,
                                      live_bytes + q.size, c.clock});

  s.counters.objects_tracked.fetch_add(1, std::memory_order_relaxed);
  s.counters.bytes_tracked.fetch_add(q.size, std::memory_order_relaxed);
  s.counters.live_objects.fetch_add(1, std::memory_order_relaxed);
  update_peak(s.counters.live_bytes.fetch_add(q.size, std::memory_order_relaxed) + q.size);
  if (c.announce) announce_period(c.period, c.explicit_marks, c.relocks);
  const bool wake = (c.ticket != EventRing::kNoTicket && !(c.quiet && quiet_events_may_wait())) || c.search_due;
  if (!service_running()) {
    // A single-threaded program in track mode (service.h): the step search on this thread, a bounded slice
    // per object, outside every lock; it keeps up (one event is logged per object).
    s.steps.try_search(s.clock_lock, kInlineSearchEvents);
  } else if (wake) {
    wake_service();
  }
  return reinterpret_cast<void*>(r.start);
}

void push_object_event(ObjectEventKind kind, uint32_t slot, const ObjectRecord& r, uint64_t size,
                       uint64_t live_bytes) noexcept {
  State& s = g_state;
  if (!s.events_enabled.load(std::memory_order_relaxed)) return;
  const uint64_t at_ns = os::measure_ns();  // the events' clock (os/measure_clock.h)
  SpinGuard clock(s.clock_lock);
  const StepClock& k = s.steps.clock();
  s.events.push(ObjectEvent{kind, r.pool.load(std::memory_order_relaxed), slot,
                            r.generation.load(std::memory_order_relaxed), r.occurrence, k.event_in_step(), k.period(),
                            k.step_index(), k.relocks(), r.tag, r.site, size, r.extent_bytes, at_ns, live_bytes,
                            s.clock_ticks});
}

bool retire_object(uint32_t slot) noexcept {
  State& s = g_state;
  ObjectRecord& r = s.heap.record(slot);
  ExtentState expected = ExtentState::kLive;
  // seq_cst: pairs with a move's claim (migration.cc, try_claim), which it must see or be seen by.
  if (!r.state.compare_exchange_strong(expected, ExtentState::kCached, std::memory_order_seq_cst)) {
    s.counters.invalid_frees.fetch_add(1, std::memory_order_relaxed);  // double free
    return false;
  }
  const uint64_t size = r.size;
  s.counters.objects_freed.fetch_add(1, std::memory_order_relaxed);
  s.counters.live_objects.fetch_sub(1, std::memory_order_relaxed);
  const uint64_t live_after = s.counters.live_bytes.fetch_sub(size, std::memory_order_relaxed) - size;
  push_object_event(ObjectEventKind::kFree, slot, r, size, live_after);
  // No sampled window may stay protected once the extent can be handed to another object.
  profiler_on_free(slot);
  return true;
}

void hand_back_extent(uint32_t slot) noexcept {
  poison_extent(g_state.heap.record(slot));
  if (migration_on_free(slot)) return;  // a move in flight hands the extent back when it ends
  release_extent(slot);
}

void free_object(void* p) noexcept {
  const uint32_t slot = g_state.heap.slot_of(p);
  if (slot == kNoSlot) {
    g_state.counters.invalid_frees.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (retire_object(slot)) hand_back_extent(slot);
}

void update_peak(uint64_t live) noexcept { update_peak_impl(live); }

void expose_object(const ObjectRecord& r) noexcept {
  auto* start = reinterpret_cast<char*>(r.start);
  ASAN_UNPOISON_MEMORY_REGION(start, r.extent_bytes);
  ASAN_POISON_MEMORY_REGION(start + r.size, r.extent_bytes - r.size);
}
void poison_extent(const ObjectRecord& r) noexcept {
  ASAN_POISON_MEMORY_REGION(reinterpret_cast<char*>(r.start), r.extent_bytes);
}

void release_extent(uint32_t slot) noexcept {
  State& s = g_state;
  const ObjectRecord& r = s.heap.record(slot);
  const uint8_t pool = r.pool.load(std::memory_order_relaxed);
  const uint64_t extent = r.charge;
  if (!s.placer.parks_freed_extents(pool)) {
    s.heap.release(slot);
    s.placer.release(pool, extent);
    return;
  }
  // Under a budget a freed fast extent keeps its pages for the next object of its class (dropping them made
  // each step fault all its fast pages in again), and its bytes stay in the budget as parked. Parked
  // before the extent is in the cache, so a concurrent reuse never finds it uncounted.
  s.placer.park_fast(extent);
  if (!s.heap.release(slot)) s.placer.unpark_fast(extent, false);  // the cache limit dropped the pages
}

void make_fast_room(uint64_t extent) noexcept {
  State& s = g_state;
  if (s.placer.parked_fast_bytes() == 0) return;
  const uint64_t shortfall = s.placer.fast_shortfall(extent);
  // Parked pages that cannot make room stay: dropping them would not let the reservation fit, and their
  // class would fault them in again (densenet121, first-touch under a 20% budget, dry run: 5,033 extents
  // trimmed in 16 steps before, 3,164 after).
  if (shortfall == 0 || shortfall > s.placer.parked_fast_bytes()) return;
  TurnoverTimer timed(s);
  // A dry run returns them in the books only: the fast node's capacity is a book there, as the slow node
  // is, and the next birth of their class faults nothing in (it books the faults: alloc_object). Dropped
  // and faulted in again, the pages cost densenet121 (batch 16, 128 px, 20%) 0.4 s of a 1.3 s step, a
  // cost of the tier the dry run does not have, as it copies no page it moves.
  const uint64_t dropped = s.heap.trim_cached(place::kFastPool, shortfall, s.config.dry_run);  // pages first,
  if (dropped > 0) s.placer.unpark_fast(dropped, true);                                      // then the budget
}

void mark_thread_internal() noexcept { t_thread.inside = 1; }

bool thread_inside_sentinel() noexcept { return ReentrancyGuard::inside(); }

void wake_service() noexcept {
  g_state.service_wake.fetch_add(1, std::memory_order_release);
  os::futex_wake(&g_state.service_wake, 1);
}

void* malloc_object(size_t size) noexcept {
  if (void* p = alloc_object(ObjectRequest{size, kPageSize})) return p;
  return system_malloc(size);
}

int posix_memalign(void** out, size_t align, size_t size) noexcept {
  if (align % sizeof(void*) != 0 || !is_power_of_two(align)) return EINVAL;
  if (align <= kHugePageSize && is_object_request(size)) {
    if (void* p = alloc_object(ObjectRequest{size, align})) {
      *out = p;
      return 0;
    }
  }
  return system_posix_memalign(out, align, size);
}

void* aligned_alloc(size_t align, size_t size) noexcept {
  if (is_power_of_two(align) && align <= kHugePageSize && is_object_request(size)) {
    if (void* p = alloc_object(ObjectRequest{size, align})) return p;
  }
  return system_aligned_alloc(align, size);
}

void* memalign(size_t align, size_t size) noexcept {
  if (is_power_of_two(align) && align <= kHugePageSize && is_object_request(size)) {
    if (void* p = alloc_object(ObjectRequest{size, align})) return p;
  }
  return system_memalign(align, size);
}

void* valloc(size_t size) noexcept {
  if (is_object_request(size)) {
    if (void* p = alloc_object(ObjectRequest{size, kPageSize})) return p;
  }
  return system_valloc(size);
}

void* pvalloc(size_t size) noexcept {
  size_t rounded;
  if (__builtin_add_overflow(size, kPageSize - 1, &rounded)) {
    errno = ENOMEM;
    return nullptr;
  }
  rounded &= ~(kPageSize - 1);
  if (rounded == 0) rounded = kPageSize;
  if (is_object_request(rounded)) {
    if (void* p = alloc_object(ObjectRequest{rounded, kPageSize})) return p;
  }
  return system_pvalloc(size);
}

}  // namespace sentinel::rt
