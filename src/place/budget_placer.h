// BudgetPlacer: the first placement policy. Each new object goes to the fast node while the fast
// budget allows, otherwise to the slow node (docs/placement.md).
//
// Accounting is in extent bytes (whole pages, the size-class rounded extent), because that is what
// can be resident. choose() reserves an object's bytes against the budget with a CAS loop, so
// concurrent allocations can never overshoot; release() returns them when the object is freed.
//
// Parked extents: under a budget a freed fast extent keeps its pages for the next object of its size class
// (dropping them made every step fault its fast pages in again). Its bytes stay counted against the budget,
// as "parked" rather than live, until an object reuses the extent (reuse_parked_fast) or its pages are
// returned to the kernel (unpark_fast). A reservation that does not fit while bytes are parked is the
// caller's cue to drop parked pages first (ObjectHeap::trim_cached, then unpark_fast).
//
// Invariant: fast_live_bytes + fast_parked_bytes <= budget_bytes() at every instant. The budget never
// decreases:
//   - bytes budget: fixed at configure();
//   - percentage budget: p% of max(highest peak given to update_peak, highest total live extent bytes
//     seen by choose()). Until the first update_peak() the budget is "provisional" (the step's peak is
//     not known yet) and follows the peak so far, so the fast share is never more than p% of what the
//     program has had live. Since the peak only grows, a reservation that fit stays within the budget.
//   - unlimited (no budget configured): everything goes to the fast node.
// With no slow node (slow_node < 0) the placer is disabled: choose() says fast node, no limit.
// The physical placement follows the decision only if the extent is bound (bind()) before first touch,
// and (with BindMode::kPreferred) only while the node has free memory; see docs/placement.md.
//
// Thread safety: configure() is not thread-safe (call once, before any other method). All other
// methods may be called concurrently. choose(), release(), update_peak() and stats() never allocate,
// never take a lock and make no system call; bind()/rebind() make one or two system calls and hold
// nothing across them. The object is constant-initialisable (constexpr constructor, no destructor
// work), so it can live in the runtime's constinit state.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "core/budget_spec.h"
#include "core/size_class.h"
#include "core/status.h"
#include "place/extent_binding.h"
#include "place/host_ledger.h"

namespace sentinel::place {

inline constexpr uint8_t kFastPool = 0;  // the heap pool whose extents live on the fast node
inline constexpr uint8_t kSlowPool = 1;
inline constexpr uint8_t kNoPool = 0xff;  // pool_of_node() of a node that is neither

// The budget grammar is shared with the offline tools (core/budget_spec.h).
using sentinel::BudgetKind;
using sentinel::BudgetSpec;

// The extent bytes the object heap uses for a request of `size` bytes (its size class), so the
// runtime can choose the pool before it asks the heap for an extent.
inline constexpr uint64_t extent_bytes_for(uint64_t size) noexcept {
  return class_pages(size_class_of_pages(pages_for(size))) * kPageSize;
}

struct PlacerConfig {
  int fast_node = 0;
  int slow_node = -1;  // -1: single-node machine, placer disabled
  BudgetSpec budget;
  BindMode mode = BindMode::kPreferred;
};

// What the caller wants for a new object: the budget decides (first touch), or a tier a plan chose. A
// wanted fast tier is still subject to the budget (forced slow when it has no room).
enum class Want : uint8_t { kAny, kFast, kSlow };

struct Decision {
  uint8_t pool = kFastPool;
  int node = -1;
  bool forced_slow = false;  // wanted fast, the budget said no
};

struct PlacerStats {
  bool enabled = false;
  int fast_node = -1, slow_node = -1;
  BudgetKind budget_kind = BudgetKind::kUnlimited;
  uint32_t budget_percent_ppm = 0;
  bool budget_resolved = false;  // bytes budget, or a step peak has been reported
  uint64_t budget_bytes = 0;     // current budget (UINT64_MAX when unlimited)
  uint64_t fast_live_bytes = 0, slow_live_bytes = 0;
  uint64_t fast_parked_bytes = 0;  // freed fast extents whose pages are kept (counted in the budget)
  uint64_t parked_reuses = 0;      // objects given a parked extent
  uint64_t parked_trimmed_bytes = 0;  // parked bytes whose pages were returned to make room
  uint64_t peak_fast_bytes = 0, peak_slow_bytes = 0, peak_total_bytes = 0;
  uint64_t fast_allocations = 0, slow_allocations = 0;
  uint64_t forced_slow_allocations = 0;
  uint64_t planned_slow_allocations = 0;  // Want::kSlow
  uint64_t binds = 0, bind_failures = 0, rebinds = 0;
  uint64_t rebinds_moving = 0;     // rebinds that moved the present pages (the drop or its bind refused)
  uint64_t binds_rehomed = 0;      // refused binds whose object was counted where its pages are
  uint64_t binds_over_budget = 0;  // of those, counted fast beyond the budget
  uint64_t release_errors = 0;  // release() of more bytes than the pool held (a caller bug)
  int last_bind_errno = 0;
  // The host ledger (a bytes budget shared by the ranks of a job on this host), when attached.
  bool host_ledger = false;
  uint64_t host_budget_bytes = 0;
  uint64_t host_fast_bytes = 0;       // every rank's fast bytes now
  uint64_t peak_host_fast_bytes = 0;  // the highest sum a reservation saw
  uint32_t host_ranks = 0;            // slots held
};

class BudgetPlacer {
 public:
  constexpr BudgetPlacer() = default;
  BudgetPlacer(const BudgetPlacer&) = delete;
  BudgetPlacer& operator=(const BudgetPlacer&) = delete;

  // Sets nodes, budget and bind mode and resets every counter. A failure (static text) for invalid input
  // (fast node out of range, fast == slow, percentage outside (0, 100]).
  Status configure(const PlacerConfig& config) noexcept;

  // Shares a bytes budget with the other ranks of the host: every fast reservation must then also fit
  // the host ledger (which must stay valid for the placer's life), and fast bytes given back are given
  // back there too. Call after configure(), before other threads use the placer.
  void attach_ledger(HostLedger* ledger) noexcept { ledger_ = ledger; }
  bool shares_host_budget() const noexcept { return ledger_ != nullptr && ledger_->joined(); }

  bool enabled() const noexcept { return enabled_; }
  // Whether freed extents of `pool` are parked: the fast pool under a budget. A parked extent keeps its
  // pages for the next object of its size class and its bytes stay counted in the budget (a freed fast
  // extent kept resident but no longer counted would hold fast memory the budget does not see).
  bool parks_freed_extents(uint8_t pool) const noexcept {
    return enabled_ && pool == kFastPool && budget_.kind != BudgetKind::kUnlimited;
  }
  int fast_node() const noexcept { return fast_node_; }
  int slow_node() const noexcept { return slow_node_; }
  // Node of a heap pool (kFastPool/kSlowPool), -1 for other pools.
  int node_of_pool(uint8_t pool) const noexcept;

  // Picks the pool of a new object of `extent_bytes` and reserves the bytes in that pool.
  Decision choose(uint64_t extent_bytes, Want want = Want::kAny) noexcept;
  // Returns the bytes of a freed object (or of a choose() whose allocation then failed).
  void release(uint8_t pool, uint64_t extent_bytes) noexcept;
  // Parking (see the header comment). park_fast: a live fast object was freed and its extent keeps its
  // pages. reuse_parked_fast: a new object takes a parked extent (no new reservation: the bytes were
  // counted). unpark_fast: parked bytes leave the budget, after their pages were dropped or because a
  // fresh reservation now counts the extent. trimmed_for_room says which, for the stats.
  void park_fast(uint64_t extent_bytes) noexcept;
  Decision reuse_parked_fast(uint64_t extent_bytes) noexcept;
  void unpark_fast(uint64_t extent_bytes, bool trimmed_for_room) noexcept;
  uint64_t parked_fast_bytes() const noexcept { return fast_parked_.load(std::memory_order_relaxed); }
  // Bytes by which a fast reservation of `extent_bytes` would exceed the budget now (0: it fits). A hint:
  // other threads may change it at once.
  uint64_t fast_shortfall(uint64_t extent_bytes) const noexcept;

  // Migration accounting. A live object's bytes are counted in the pool it moves to from the moment its
  // move is queued until the move ends, and in the pool it leaves until then too: an object in flight
  // occupies both tiers, so the budget holds while pages are being copied.
  //   begin_move(to)  - counts the bytes in `to`; to the fast pool only if they fit the budget (false:
  //                     the move must not be queued);
  //   end_move(from, to, moved) - a moved object leaves `from`; one that did not move leaves `to`.
  bool begin_move(uint8_t to, uint64_t extent_bytes) noexcept;
  void end_move(uint8_t from, uint8_t to, uint64_t extent_bytes, bool moved) noexcept;

  // A training step's peak of live object bytes is known: resolves (and may raise) a percentage
  // budget. Values lower than earlier ones change nothing.
  void update_peak(uint64_t step_peak_bytes) noexcept;
  uint64_t budget_bytes() const noexcept;

  // Binds a fresh extent to decision.node before its first touch, with the configured mode.
  bool bind(void* addr, uint64_t extent_bytes, const Decision& d, std::string_view* why, int* err = nullptr) noexcept;
  // Gives a recycled extent that was bound to another node the decision's node. Its old contents are
  // dropped first (*contents_dropped: the caller may treat it as zeroed); when the kernel refuses the
  // drop or the bind, the pages present are moved instead (contents kept). False: the extent is still
  // bound to its old node.
  bool rebind(void* addr, uint64_t extent_bytes, const Decision& d, std::string_view* why,
              bool* contents_dropped = nullptr, int* err = nullptr) noexcept;
  // An extent whose bind the kernel refused lives where its pages are: its bytes move from the pool
  // chosen to `actual`. Into the fast pool beyond the budget only when there is no room (counted in
  // binds_over_budget: the budget never misses a page that is in fast memory).
  void rehome(uint8_t chosen, uint8_t actual, uint64_t extent_bytes) noexcept;
  // The pool of a node: kFastPool for the fast node, kSlowPool for the slow one, kNoPool otherwise.
  uint8_t pool_of_node(int node) const noexcept;

  PlacerStats stats() const noexcept;

 private:
  uint64_t budget_for_peak(uint64_t peak) const noexcept;
  // Adds the bytes to the fast pool if they fit the budget (one CAS loop; never overshoots).
  bool try_reserve_fast(uint64_t extent_bytes) noexcept;
  // Takes bytes out of the fast pool (and the host ledger).
  void release_fast(uint64_t extent_bytes) noexcept;
  static void subtract_clamped(std::atomic<uint64_t>& live, uint64_t bytes, std::atomic<uint64_t>& errors) noexcept;
  static void raise(std::atomic<uint64_t>& peak, uint64_t value) noexcept;
  void count_bind(bool ok, int err) noexcept;

  bool enabled_ = false;
  int fast_node_ = 0;
  int slow_node_ = -1;
  BudgetSpec budget_;
  BindMode mode_ = BindMode::kPreferred;
  HostLedger* ledger_ = nullptr;

  std::atomic<uint64_t> fast_live_{0};  // live and parked fast bytes: what the budget bounds
  std::atomic<uint64_t> fast_parked_{0};
  std::atomic<uint64_t> parked_reuses_{0};
  std::atomic<uint64_t> parked_trimmed_{0};
  std::atomic<uint64_t> slow_live_{0};
  std::atomic<uint64_t> total_live_{0};
  std::atomic<uint64_t> peak_fast_{0};
  std::atomic<uint64_t> peak_slow_{0};
  std::atomic<uint64_t> peak_total_{0};   // highest fast+slow live bytes choose() has seen
  std::atomic<uint64_t> step_peak_{0};    // highest value given to update_peak
  std::atomic<bool> resolved_{false};
  std::atomic<uint64_t> fast_allocs_{0};
  std::atomic<uint64_t> slow_allocs_{0};
  std::atomic<uint64_t> forced_slow_{0};
  std::atomic<uint64_t> planned_slow_{0};
  std::atomic<uint64_t> binds_{0};
  std::atomic<uint64_t> bind_failures_{0};
  std::atomic<uint64_t> rebinds_{0};
  std::atomic<uint64_t> rebinds_moving_{0};
  std::atomic<uint64_t> binds_rehomed_{0};
  std::atomic<uint64_t> binds_over_budget_{0};
  std::atomic<uint64_t> release_errors_{0};
  std::atomic<int> last_bind_errno_{0};
};

}  // namespace sentinel::place
