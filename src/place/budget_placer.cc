#include "place/budget_placer.h"

#include "core/env.h"

namespace sentinel::place {
namespace {

constexpr uint64_t kUnlimited = ~uint64_t{0};
constexpr uint32_t kMillion = 1000000;

}  // namespace

Status BudgetPlacer::configure(const PlacerConfig& config) noexcept {
  if (config.fast_node < 0 || config.fast_node > kMaxNodeId || config.slow_node > kMaxNodeId) {
    return Status::error("node id out of range");
  }
  if (config.slow_node == config.fast_node) return Status::error("fast and slow node are the same");
  if (config.budget.kind == BudgetKind::kPercent &&
      (config.budget.percent_ppm == 0 || config.budget.percent_ppm > kMillion)) {
    return Status::error("percentage budget outside (0, 100]");
  }
  fast_node_ = config.fast_node;
  slow_node_ = config.slow_node < 0 ? -1 : config.slow_node;
  enabled_ = slow_node_ >= 0;
  budget_ = config.budget;
  mode_ = config.mode;
  for (auto* c : {&fast_live_, &fast_parked_, &parked_reuses_, &parked_trimmed_, &slow_live_, &total_live_, &peak_fast_, &peak_slow_, &peak_total_,
                  &step_peak_, &fast_allocs_, &slow_allocs_, &forced_slow_, &planned_slow_, &binds_, &bind_failures_,
                  &rebinds_, &rebinds_moving_, &binds_rehomed_, &binds_over_budget_, &release_errors_}) {
    c->store(0, std::memory_order_relaxed);
  }
  resolved_.store(budget_.kind != BudgetKind::kPercent, std::memory_order_relaxed);
  last_bind_errno_.store(0, std::memory_order_relaxed);
  return Status::ok();
}

int BudgetPlacer::node_of_pool(uint8_t pool) const noexcept {
  if (pool == kFastPool) return fast_node_;
  if (pool == kSlowPool) return slow_node_;
  return -1;
}

uint64_t BudgetPlacer::budget_for_peak(uint64_t peak) const noexcept {
  switch (budget_.kind) {
    case BudgetKind::kBytes: return budget_.bytes;
    case BudgetKind::kPercent: {
      const unsigned __int128 b = static_cast<unsigned __int128>(peak) * budget_.percent_ppm / kMillion;
      return static_cast<uint64_t>(b);
    }
    case BudgetKind::kUnlimited: break;
  }
  return kUnlimited;
}

uint64_t BudgetPlacer::budget_bytes() const noexcept {
  if (!enabled_) return kUnlimited;
  const uint64_t own = peak_total_.load(std::memory_order_acquire);
  const uint64_t reported = step_peak_.load(std::memory_order_acquire);
  return budget_for_peak(own > reported ? own : reported);
}

void BudgetPlacer::raise(std::atomic<uint64_t>& peak, uint64_t value) noexcept {
  uint64_t cur = peak.load(std::memory_order_relaxed);
  while (value > cur && !peak.compare_exchange_weak(cur, value, std::memory_order_acq_rel,
                                                    std::memory_order_relaxed)) {
  }
}

bool BudgetPlacer::try_reserve_fast(uint64_t extent_bytes) noexcept {
  const uint64_t budget = budget_bytes();
  uint64_t fast = fast_live_.load(std::memory_order_relaxed);
  // The budget read above can only have grown since, so a reservation that fits it is safe.
  while (fast <= budget && extent_bytes <= budget - fast) {
    if (fast_live_.compare_exchange_weak(fast, fast + extent_bytes, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
      // The host's other ranks count too: the bytes must also fit the shared budget.
      if (ledger_ != nullptr && ledger_->joined() && !ledger_->try_reserve(extent_bytes)) {
        std::atomic<uint64_t> ignored{0};
        subtract_clamped(fast_live_, extent_bytes, ignored);
        return false;
      }
      raise(peak_fast_, fast + extent_bytes);
      return true;
    }
  }
  return false;
}

Decision BudgetPlacer::choose(uint64_t extent_bytes, Want want) noexcept {
  Decision d;
  if (!enabled_) {
    d.pool = kFastPool;
    d.node = fast_node_;
    raise(peak_fast_, fast_live_.fetch_add(extent_bytes, std::memory_order_relaxed) + extent_bytes);
    fast_allocs_.fetch_add(1, std::memory_order_relaxed);
    return d;
  }
  // The peak is raised before the budget is read, so a percentage budget already counts this object:
  // the fast share stays within p% of a peak the program has really reached.
  raise(peak_total_, total_live_.fetch_add(extent_bytes, std::memory_order_acq_rel) + extent_bytes);
  if (want != Want::kSlow && try_reserve_fast(extent_bytes)) {
    fast_allocs_.fetch_add(1, std::memory_order_relaxed);
    d.pool = kFastPool;
    d.node = fast_node_;
    return d;
  }
  raise(peak_slow_, slow_live_.fetch_add(extent_bytes, std::memory_order_relaxed) + extent_bytes);
  slow_allocs_.fetch_add(1, std::memory_order_relaxed);
  d.pool = kSlowPool;
  d.node = slow_node_;
  if (want == Want::kSlow) {
    planned_slow_.fetch_add(1, std::memory_order_relaxed);
  } else {
    forced_slow_.fetch_add(1, std::memory_order_relaxed);
    d.forced_slow = true;
  }
  return d;
}

void BudgetPlacer::release(uint8_t pool, uint64_t extent_bytes) noexcept {
  std::atomic<uint64_t>* live = pool == kFastPool ? &fast_live_ : (pool == kSlowPool ? &slow_live_ : nullptr);
  if (live == nullptr || (pool == kSlowPool && !enabled_)) {
    release_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Clamped at zero: an unbalanced release must not wrap the counter and open the budget wide.
  if (pool == kFastPool) {
    release_fast(extent_bytes);
  } else {
    subtract_clamped(*live, extent_bytes, release_errors_);
  }
  if (enabled_) {
    std::atomic<uint64_t> ignored{0};
    subtract_clamped(total_live_, extent_bytes, ignored);
  }
}

void BudgetPlacer::subtract_clamped(std::atomic<uint64_t>& live, uint64_t bytes,
                                    std::atomic<uint64_t>& errors) noexcept {
  uint64_t cur = live.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    next = cur >= bytes ? cur - bytes : 0;
  } while (!live.compare_exchange_weak(cur, next, std::memory_order_acq_rel, std::memory_order_relaxed));
  if (cur < bytes) errors.fetch_add(1, std::memory_order_relaxed);
}

void BudgetPlacer::park_fast(uint64_t extent_bytes) noexcept {
  // Counted as parked before it leaves the live count, so the two never both miss it.
  fast_parked_.fetch_add(extent_bytes, std::memory_order_acq_rel);
  std::atomic<uint64_t> ignored{0};
  subtract_clamped(total_live_, extent_bytes, ignored);
}

Decision BudgetPlacer::reuse_parked_fast(uint64_t extent_bytes) noexcept {
  raise(peak_total_, total_live_.fetch_add(extent_bytes, std::memory_order_acq_rel) + extent_bytes);
  subtract_clamped(fast_parked_, extent_bytes, release_errors_);
  fast_allocs_.fetch_add(1, std::memory_order_relaxed);
  parked_reuses_.fetch_add(1, std::memory_order_relaxed);
  Decision d;
  d.pool = kFastPool;
  d.node = fast_node_;
  return d;
}

void BudgetPlacer::unpark_fast(uint64_t extent_bytes, bool trimmed_for_room) noexcept {
  subtract_clamped(fast_parked_, extent_bytes, release_errors_);
  release_fast(extent_bytes);
  if (trimmed_for_room) parked_trimmed_.fetch_add(extent_bytes, std::memory_order_relaxed);
}

uint64_t BudgetPlacer::fast_shortfall(uint64_t extent_bytes) const noexcept {
  const uint64_t budget = budget_bytes();
  const uint64_t fast = fast_live_.load(std::memory_order_relaxed);
  if (fast <= budget && extent_bytes <= budget - fast) return 0;
  return fast > budget ? extent_bytes : extent_bytes - (budget - fast);
}

bool BudgetPlacer::begin_move(uint8_t to, uint64_t extent_bytes) noexcept {
  if (!enabled_ || (to != kFastPool && to != kSlowPool)) return false;
  if (to == kSlowPool) {
    raise(peak_slow_, slow_live_.fetch_add(extent_bytes, std::memory_order_relaxed) + extent_bytes);
    return true;
  }
  return try_reserve_fast(extent_bytes);
}

void BudgetPlacer::end_move(uint8_t from, uint8_t to, uint64_t extent_bytes, bool moved) noexcept {
  const uint8_t leave = moved ? from : to;
  if (leave == kFastPool) {
    release_fast(extent_bytes);
  } else {
    subtract_clamped(slow_live_, extent_bytes, release_errors_);
  }
}

void BudgetPlacer::release_fast(uint64_t extent_bytes) noexcept {
  subtract_clamped(fast_live_, extent_bytes, release_errors_);
  if (enabled_ && ledger_ != nullptr) ledger_->release(extent_bytes);
}

void BudgetPlacer::update_peak(uint64_t step_peak_bytes) noexcept {
  raise(step_peak_, step_peak_bytes);
  resolved_.store(true, std::memory_order_release);
}

void BudgetPlacer::count_bind(bool ok, int err) noexcept {
  if (ok) return;
  bind_failures_.fetch_add(1, std::memory_order_relaxed);
  last_bind_errno_.store(err, std::memory_order_relaxed);
}

bool BudgetPlacer::bind(void* addr, uint64_t extent_bytes, const Decision& d, std::string_view* why,
                        int* err_out) noexcept {
  binds_.fetch_add(1, std::memory_order_relaxed);
  int err = 0;
  const bool ok = bind_range(addr, extent_bytes, d.node, mode_, false, why, &err);
  count_bind(ok, err);
  if (err_out != nullptr) *err_out = ok ? 0 : err;
  return ok;
}

bool BudgetPlacer::rebind(void* addr, uint64_t extent_bytes, const Decision& d, std::string_view* why,
                          bool* contents_dropped, int* err_out) noexcept {
  rebinds_.fetch_add(1, std::memory_order_relaxed);
  int err = 0;
  bool ok = rebind_discarding(addr, extent_bytes, d.node, mode_, why, &err);
  if (contents_dropped != nullptr) *contents_dropped = ok;
  if (!ok) {
    // Left as it is, the extent's pages (resident, or faulting in under its old policy) would sit on
    // the old node while the object is counted on the new one. Whatever the drop did, moving the pages
    // that are present also binds the range.
    ok = bind_range(addr, extent_bytes, d.node, mode_, /*move_present=*/true, why, &err);
    if (ok) rebinds_moving_.fetch_add(1, std::memory_order_relaxed);
  }
  count_bind(ok, err);
  if (err_out != nullptr) *err_out = ok ? 0 : err;
  return ok;
}

void BudgetPlacer::rehome(uint8_t chosen, uint8_t actual, uint64_t extent_bytes) noexcept {
  if (!enabled_ || chosen == actual || (actual != kFastPool && actual != kSlowPool)) return;
  binds_rehomed_.fetch_add(1, std::memory_order_relaxed);
  if (actual == kSlowPool) {
    raise(peak_slow_, slow_live_.fetch_add(extent_bytes, std::memory_order_relaxed) + extent_bytes);
    release_fast(extent_bytes);
    return;
  }
  if (!try_reserve_fast(extent_bytes)) {
    binds_over_budget_.fetch_add(1, std::memory_order_relaxed);
    raise(peak_fast_, fast_live_.fetch_add(extent_bytes, std::memory_order_acq_rel) + extent_bytes);
    if (ledger_ != nullptr && ledger_->joined()) ledger_->force_reserve(extent_bytes);
  }
  subtract_clamped(slow_live_, extent_bytes, release_errors_);
}

uint8_t BudgetPlacer::pool_of_node(int node) const noexcept {
  if (node == fast_node_) return kFastPool;
  if (enabled_ && node == slow_node_) return kSlowPool;
  return kNoPool;
}

PlacerStats BudgetPlacer::stats() const noexcept {
  PlacerStats s;
  s.enabled = enabled_;
  s.fast_node = fast_node_;
  s.slow_node = slow_node_;
  s.budget_kind = enabled_ ? budget_.kind : BudgetKind::kUnlimited;
  s.budget_percent_ppm = budget_.kind == BudgetKind::kPercent ? budget_.percent_ppm : 0;
  s.budget_resolved = resolved_.load(std::memory_order_acquire);
  s.fast_parked_bytes = fast_parked_.load(std::memory_order_acquire);
  const uint64_t held = fast_live_.load(std::memory_order_acquire);
  s.fast_live_bytes = held > s.fast_parked_bytes ? held - s.fast_parked_bytes : 0;
  s.parked_reuses = parked_reuses_.load(std::memory_order_relaxed);
  s.parked_trimmed_bytes = parked_trimmed_.load(std::memory_order_relaxed);
  s.slow_live_bytes = slow_live_.load(std::memory_order_relaxed);
  s.peak_fast_bytes = peak_fast_.load(std::memory_order_relaxed);
  s.peak_slow_bytes = peak_slow_.load(std::memory_order_relaxed);
  s.peak_total_bytes = peak_total_.load(std::memory_order_relaxed);
  s.fast_allocations = fast_allocs_.load(std::memory_order_relaxed);
  s.slow_allocations = slow_allocs_.load(std::memory_order_relaxed);
  s.forced_slow_allocations = forced_slow_.load(std::memory_order_relaxed);
  s.planned_slow_allocations = planned_slow_.load(std::memory_order_relaxed);
  s.binds = binds_.load(std::memory_order_relaxed);
  s.bind_failures = bind_failures_.load(std::memory_order_relaxed);
  s.rebinds = rebinds_.load(std::memory_order_relaxed);
  s.rebinds_moving = rebinds_moving_.load(std::memory_order_relaxed);
  s.binds_rehomed = binds_rehomed_.load(std::memory_order_relaxed);
  s.binds_over_budget = binds_over_budget_.load(std::memory_order_relaxed);
  s.release_errors = release_errors_.load(std::memory_order_relaxed);
  s.last_bind_errno = last_bind_errno_.load(std::memory_order_relaxed);
  if (ledger_ != nullptr) {
    s.host_ledger = true;
    s.host_budget_bytes = ledger_->budget();
    s.host_fast_bytes = ledger_->host_held();
    s.peak_host_fast_bytes = ledger_->peak_host_held();
    s.host_ranks = ledger_->live_slots();
  }
  // Read last: the budget only grows, so it bounds the byte counts read above. (Read first, a budget
  // raised by a concurrent peak could look smaller than a reservation made under the raised one.)
  s.budget_bytes = budget_bytes();
  return s;
}

}  // namespace sentinel::place
