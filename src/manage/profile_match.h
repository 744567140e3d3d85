// ProfileMatcher: whether a recorded profile (SENTINEL_PROFILE_IN, or the profile LOCAL_RANK 0 shares with
// its host's other ranks, docs/distributed.md) describes the running program, so that its plan can be put
// in force without profiling.
//
// The rule: once the detector's period is the profile's, the first whole step (from an event 0 to the next
// step) is compared with the profile's expected tags (expected_tags, compiled_plan.h). The share of that
// step's allocations that match is the larger of
//  - in order: the allocation at event k carries the tag expected at k (as plan_tag knows it), and
//  - in any order (any_order_share): threads that allocate concurrently, such as a DDP rank's autograd and
//    communication threads, interleave differently from step to step;
// at least kMatchShare of them is a match. A detector that still sees another period after step 2 has
// found another program, unless that period is shorter than kSetUpPeriod: a set-up loop (a program that
// marks the steps of its set-up, one parameter each, say), which nobody plans (preload/manager_state.h,
// kMinPlanPeriod), so it is waited out.
//
// Thread safety: none; one owner (the runtime calls it on the service thread, preload/manager_match.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace sentinel::manage {

// The share of `seen` tags that `expected` contains (0 entries are no tag), each expected tag counted once;
// a seen tag also matches its derived tag (core/hash.h). 0 when `seen` is empty.
double any_order_share(const std::vector<uint64_t>& expected, const std::vector<uint64_t>& seen);

class ProfileMatcher {
 public:
  static constexpr double kMatchShare = 0.9;
  static constexpr uint32_t kSetUpPeriod = 4;  // also the shortest step managed mode plans (kMinPlanPeriod)
  enum class Verdict {
    kUndecided,    // feed more allocations
    kOtherPeriod,  // the program's steps have another period than the profile's
    kMatches,
    kDiffers,      // a whole step compared: share() is below kMatchShare
  };

  // `expected`: the profile's expected tag per event; its size is the profile's period.
  explicit ProfileMatcher(std::vector<uint64_t> expected);

  // One allocation of the program at (step, event) while the detector's period is `period` (step < 0 or
  // period 0: no step structure yet). A verdict other than kUndecided is final.
  Verdict on_alloc(int64_t step, uint32_t event, uint32_t period, uint64_t tag);

  uint32_t period() const { return static_cast<uint32_t>(expected_.size()); }
  // The matching share of the step compared (kMatches, kDiffers).
  double share() const { return share_; }

 private:
  std::vector<uint64_t> expected_;
  int64_t step_ = -1;  // the step being compared, -1 until its event 0
  uint32_t events_ = 0, in_order_hits_ = 0;
  std::vector<uint64_t> seen_;  // that step's tags, in the order they came
  double share_ = 0;
};

}  // namespace sentinel::manage
