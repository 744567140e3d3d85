// OccupancyTree: bytes planned in fast memory per phase of the step clock, with range add and range
// max over circular phase ranges (a segment tree with lazy propagation; O(log period) per call).
// Used by the planner and the static baselines to keep a placement within the budget.
//
// Thread safety: none; one owner.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sentinel {

class OccupancyTree {
 public:
  explicit OccupancyTree(uint32_t period) : n_(std::max<uint32_t>(1, period)), max_(4 * n_, 0), lazy_(4 * n_, 0) {}

  // Circular range of `len` phases starting at `begin` (len is clamped to the period).
  void add(uint32_t begin, uint32_t len, int64_t bytes) {
    for_pieces(begin, len, [&](uint32_t b, uint32_t e) { add_rec(1, 0, n_, b, e, bytes); });
  }
  int64_t max(uint32_t begin, uint32_t len) const {
    int64_t m = 0;
    for_pieces(begin, len, [&](uint32_t b, uint32_t e) { m = std::max(m, max_rec(1, 0, n_, b, e)); });
    return m;
  }
  bool fits(uint32_t begin, uint32_t len, uint64_t bytes, uint64_t limit) const {
    return static_cast<uint64_t>(max(begin, len)) + bytes <= limit;
  }
  uint32_t period() const { return n_; }

 private:
  template <typename F>
  void for_pieces(uint32_t begin, uint32_t len, F&& f) const {
    len = std::min(len, n_);
    if (len == 0) return;
    begin %= n_;
    if (begin + len <= n_) {
      f(begin, begin + len);
    } else {
      f(begin, n_);
      f(0, begin + len - n_);
    }
  }
  void add_rec(uint32_t node, uint32_t lo, uint32_t hi, uint32_t b, uint32_t e, int64_t v) {
    if (e <= lo || hi <= b) return;
    if (b <= lo && hi <= e) {
      max_[node] += v;
      lazy_[node] += v;
      return;
    }
    uint32_t mid = lo + (hi - lo) / 2;
    add_rec(2 * node, lo, mid, b, e, v);
    add_rec(2 * node + 1, mid, hi, b, e, v);
    max_[node] = lazy_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }
  int64_t max_rec(uint32_t node, uint32_t lo, uint32_t hi, uint32_t b, uint32_t e) const {
    if (e <= lo || hi <= b) return INT64_MIN / 4;
    if (b <= lo && hi <= e) return max_[node];
    uint32_t mid = lo + (hi - lo) / 2;
    return lazy_[node] + std::max(max_rec(2 * node, lo, mid, b, e), max_rec(2 * node + 1, mid, hi, b, e));
  }

  uint32_t n_;
  std::vector<int64_t> max_, lazy_;
};

}  // namespace sentinel
