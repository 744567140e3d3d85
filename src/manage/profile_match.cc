#include "manage/profile_match.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "core/hash.h"
#include "manage/compiled_plan.h"

namespace sentinel::manage {

double any_order_share(const std::vector<uint64_t>& expected, const std::vector<uint64_t>& seen) {
  if (seen.empty()) return 0.0;
  std::unordered_multiset<uint64_t> left;
  for (uint64_t t : expected)
    if (t != 0) left.insert(t);
  size_t hits = 0;
  for (uint64_t t : seen) {
    auto it = left.find(t);
    if (it == left.end()) it = left.find(derived_tag(t));
    if (it == left.end()) continue;
    left.erase(it);
    ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(seen.size());
}

ProfileMatcher::ProfileMatcher(std::vector<uint64_t> expected) : expected_(std::move(expected)) {}

ProfileMatcher::Verdict ProfileMatcher::on_alloc(int64_t step, uint32_t event, uint32_t period, uint64_t tag) {
  if (step < 0 || period == 0) return Verdict::kUndecided;
  if (period != this->period()) {
    // The detector may lock onto a set-up loop first: give it the first steps to find the real one.
    return step > 2 && period >= kSetUpPeriod ? Verdict::kOtherPeriod : Verdict::kUndecided;
  }
  if (step_ < 0) {
    if (event != 0) return Verdict::kUndecided;  // a whole step only
    step_ = step;
  }
  if (step == step_) {
    ++events_;
    seen_.push_back(tag);
    if (event < expected_.size() && expected_[event] == plan_tag(tag, expected_[event])) ++in_order_hits_;
    return Verdict::kUndecided;
  }
  const double in_order = events_ == 0 ? 0.0 : static_cast<double>(in_order_hits_) / events_;
  share_ = std::max(in_order, any_order_share(expected_, seen_));
  return share_ >= kMatchShare ? Verdict::kMatches : Verdict::kDiffers;
}

}  // namespace sentinel::manage
