// Which late prefetches make managed mode plan again, and how much earlier they are then planned.
//
// A prefetch is late when its object is not on the fast tier as the phase of its use begins
// (PlanExecutor). Some are late in every step: the plan issues them too close to their use for the
// channel as it is. Others are late once: the service thread read the step's events a moment behind, or
// the channel ran behind other moves. A replan is a planner run on the service thread (0.17 s of CPU a
// time for ViT-B/16 at batch 16, whose profile has 14,606 objects a step), which on a machine whose cores
// the program's threads all use is taken from the program; replanning for jitter changes the plan every
// step and never settles (vit_b_16: 2-5 different tags late after every one of the 8 replans allowed).
//
// The rule: a tag counts when it was late in this managed step and in the one before (`repeated`). Each
// time it counts, its extra lookahead doubles (1, 2, 4, ... phases, at most kMaxExtraPhases): one phase
// is one allocation event, which in a long step is a millisecond or less, and a prefetch late by tens of
// phases needed as many replans when each added one. And a replan must pay: after one made for n tags,
// the next is made only for fewer than n (`improves_on_last`). Prefetches that stay late however early
// they are planned wait on something lookahead does not change (the budget, a full channel); ViT-B/16 at
// batch 16 went 12, 2, 2, 2, 4, 5, 8 and replanned every step.
//
// Thread safety: none (the manager calls it on the service thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sentinel::manage {

class LateLookahead {
 public:
  static constexpr uint32_t kMaxExtraPhases = 1u << 20;

  // The tags late in the managed step just closed; returns those that were late in the step before as
  // well, in the order given.
  std::vector<uint64_t> repeated(const std::vector<uint64_t>& late_now);
  // Doubles the extra lookahead of each tag (from 0 to 1).
  static void raise(const std::vector<uint64_t>& tags, std::unordered_map<uint64_t, uint32_t>* extra_phases);
  // Whether a replan for n tags may be made: the first always, then only for fewer than the last one
  // made. Records n when it may.
  bool improves_on_last(size_t n);
  // Forgets the steps before and the replans made (a new profile: its tags mean other objects).
  void clear() {
    before_.clear();
    last_replan_tags_ = 0;
  }

 private:
  std::unordered_set<uint64_t> before_;
  size_t last_replan_tags_ = 0;  // 0: no replan made yet
};

}  // namespace sentinel::manage
