#include "plan/lower_bound.h"

#include <algorithm>
#include <cmath>

namespace sentinel {
namespace {

struct Item {
  double size, lat, bw;  // bytes; latency term and bandwidth term of its accesses when slow (ns)
};

// min over fractional x within budget of lam * lat(x) + (1 - lam) * (bw(x) - d).
double mixed_min(std::vector<Item>& items, double budget, double lam, double d) {
  double total = 0;
  for (const Item& it : items) total += lam * it.lat + (1 - lam) * it.bw;
  std::sort(items.begin(), items.end(), [lam](const Item& a, const Item& b) {
    return (lam * a.lat + (1 - lam) * a.bw) * b.size > (lam * b.lat + (1 - lam) * b.bw) * a.size;
  });
  double cap = budget, saved = 0;
  for (const Item& it : items) {
    if (cap <= 0) break;
    if (it.size > budget) continue;  // never fast: it does not fit alone
    const double take = std::min(1.0, cap / std::max(1.0, it.size));
    saved += take * (lam * it.lat + (1 - lam) * it.bw);
    cap -= take * it.size;
  }
  return total - saved - (1 - lam) * d;
}

// Same with whole objects (0/1 knapsack, dynamic programme over capacity in kUnit steps). Sizes are
// rounded down and the budget up to whole units, which only enlarges the feasible sets, so the result
// stays a lower bound of the whole-object minimum. Each lambda gives a valid bound (Lagrangian dual).
constexpr double kUnit = 64 * 1024;

double mixed_min_integral(const std::vector<Item>& items, double budget, double lam, double d,
                          std::vector<double>* dp) {
  const size_t cap = static_cast<size_t>(std::ceil(budget / kUnit));
  dp->assign(cap + 1, 0.0);
  double total = 0;
  for (const Item& it : items) {
    const double cost = lam * it.lat + (1 - lam) * it.bw;
    total += cost;
    if (it.size > budget) continue;
    const size_t w = static_cast<size_t>(std::floor(it.size / kUnit));
    if (w == 0) {
      for (double& x : *dp) x += cost;
      continue;
    }
    for (size_t c = cap; c >= w; --c) (*dp)[c] = std::max((*dp)[c], (*dp)[c - w] + cost);
  }
  return total - (*dp)[cap] - (1 - lam) * d;
}

}  // namespace

void lower_bound(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, LowerBound* out) {
  const uint32_t P = index.period();
  const double lat_delta = mem.latency_delta_ns();
  LowerBound lb;
  lb.phase_extra_ns.assign(P, 0);
  double extra_sum = 0, frac_sum = 0;
  std::vector<Item> items;
  for (uint32_t k = 0; k < P; ++k) {
    items.clear();
    for (const PhaseAccessRef& a : index.accesses_in(k)) {
      const double r = static_cast<double>(a.reads), w = static_cast<double>(a.writes);
      items.push_back({static_cast<double>(index.object(a.obj).size), r * lat_delta,
                       r * mem.access_bytes / mem.slow.read_bw_gbps +
                           w * mem.access_bytes / mem.slow.write_bw_gbps});
    }
    if (items.empty()) continue;
    const double d = static_cast<double>(index.duration(k));
    // Dual of the LP: g(lam) = min_x [lam f(x) + (1-lam) g(x)] is concave; its maximum is the LP
    // value. Ternary search, then the best of the probed points (any probe is a valid bound).
    double lo = 0, hi = 1, best = std::max(mixed_min(items, budget, 0, d), mixed_min(items, budget, 1, d));
    for (int it = 0; it < 40; ++it) {
      const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
      const double g1 = mixed_min(items, budget, m1, d), g2 = mixed_min(items, budget, m2, d);
      best = std::max(best, std::max(g1, g2));
      if (g1 < g2) lo = m1; else hi = m2;
    }
    frac_sum += std::max(0.0, best);
    // Whole objects: the Lagrangian dual over lambda of the 0/1 problem, never below the LP value.
    double lo2 = 0, hi2 = 1, best2 = best;
    std::vector<double> dp;
    for (int it = 0; it < 30; ++it) {
      const double m1 = lo2 + (hi2 - lo2) / 3, m2 = hi2 - (hi2 - lo2) / 3;
      const double g1 = mixed_min_integral(items, budget, m1, d, &dp);
      const double g2 = mixed_min_integral(items, budget, m2, d, &dp);
      best2 = std::max(best2, std::max(g1, g2));
      if (g1 < g2) lo2 = m1; else hi2 = m2;
    }
    best2 = std::max({best2, mixed_min_integral(items, budget, 0, d, &dp),
                      mixed_min_integral(items, budget, 1, d, &dp)});
    lb.phase_extra_ns[k] = std::max(0.0, best2);
    extra_sum += lb.phase_extra_ns[k];
  }
  lb.step_ns = static_cast<double>(index.step_ns()) + extra_sum;
  lb.fractional_ns = static_cast<double>(index.step_ns()) + frac_sum;
  *out = std::move(lb);
}

uint64_t min_budget_for_ratio(const ProfileIndex& index, const MemorySystem& mem, double target_ratio) {
  const double target = target_ratio * static_cast<double>(index.step_ns());
  uint64_t lo = 0, hi = index.peak_bytes();
  const uint64_t tol = std::max<uint64_t>(1, hi / 1000);
  LowerBound lb;
  while (hi - lo > tol) {
    const uint64_t mid = lo + (hi - lo) / 2;
    lower_bound(index, mem, mid, &lb);
    if (lb.step_ns <= target) hi = mid; else lo = mid;
  }
  return hi;
}

}  // namespace sentinel
