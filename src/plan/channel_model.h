// ChannelModel: the planner's estimate of the migration channel, as capacity in ns per phase of the
// step clock (the measured phase duration). A copy issued at an event takes free capacity from that
// phase onwards until its copy time is covered; where it ends is its estimated completion. This is a
// fluid approximation of the FIFO channel of the cost model (admission order, not issue order, decides
// who gets capacity first); the planner checks the real FIFO afterwards (budget_repair.h).
//
// Thread safety: none; one owner.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "plan/profile_index.h"

namespace sentinel::plan_detail {

class ChannelModel {
 public:
  explicit ChannelModel(const ProfileIndex& index);
  // Phases from `event` (0 = the copy ends within phase `event`) until a copy of `copy_ns` completes,
  // or the period if it cannot complete within one step. With commit, the capacity is taken.
  uint32_t fill(uint32_t event, double copy_ns, bool commit);

 private:
  uint32_t period_;
  std::vector<double> free_;
  std::set<uint32_t> open_;  // phases with free capacity
};

}  // namespace sentinel::plan_detail
