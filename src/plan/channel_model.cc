#include "plan/channel_model.h"

#include <algorithm>

namespace sentinel::plan_detail {

ChannelModel::ChannelModel(const ProfileIndex& index) : period_(index.period()), free_(index.period()) {
  for (uint32_t k = 0; k < period_; ++k) {
    free_[k] = static_cast<double>(index.duration(k));
    if (free_[k] > 0) open_.insert(open_.end(), k);
  }
}

uint32_t ChannelModel::fill(uint32_t event, double copy_ns, bool commit) {
  // Walk an unrolled clock u = event .. event + period - 1; each phase is visited at most once.
  double need = copy_ns;
  const uint64_t begin = event % period_, end = begin + period_;
  uint64_t u = begin;
  std::vector<std::pair<uint32_t, double>> taken;
  while (need > 0) {
    const uint32_t k = static_cast<uint32_t>(u % period_);
    auto it = open_.lower_bound(k);
    uint64_t nu;
    if (it != open_.end()) nu = u + (*it - k);
    else if (!open_.empty()) nu = u + (period_ - k) + *open_.begin();
    else return period_;
    if (nu >= end) return period_;
    const uint32_t nk = static_cast<uint32_t>(nu % period_);
    const double take = std::min(free_[nk], need);
    need -= take;
    taken.push_back({nk, take});
    u = need > 0 ? nu + 1 : nu;
    if (u >= end) return period_;
  }
  if (commit) {
    for (const auto& [k, t] : taken) {
      free_[k] -= t;
      if (free_[k] <= 1e-9) open_.erase(k);
    }
  }
  return static_cast<uint32_t>(u - begin);
}

}  // namespace sentinel::plan_detail
