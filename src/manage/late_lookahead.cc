#include "manage/late_lookahead.h"

#include <algorithm>

namespace sentinel::manage {

std::vector<uint64_t> LateLookahead::repeated(const std::vector<uint64_t>& late_now) {
  std::vector<uint64_t> again;
  for (uint64_t tag : late_now) {
    if (before_.count(tag) != 0) again.push_back(tag);
  }
  before_.clear();
  before_.insert(late_now.begin(), late_now.end());
  return again;
}

bool LateLookahead::improves_on_last(size_t n) {
  if (n == 0 || (last_replan_tags_ != 0 && n >= last_replan_tags_)) return false;
  last_replan_tags_ = n;
  return true;
}

void LateLookahead::raise(const std::vector<uint64_t>& tags, std::unordered_map<uint64_t, uint32_t>* extra_phases) {
  for (uint64_t tag : tags) {
    uint32_t& extra = (*extra_phases)[tag];
    extra = extra == 0 ? 1 : std::min<uint32_t>(2 * extra, kMaxExtraPhases);
  }
}

}  // namespace sentinel::manage
