// A MoveSink with the runtime's budget accounting (BudgetPlacer's begin_move/end_move rules): a move to the
// fast tier is refused unless its bytes fit the budget; an object in flight counts on both tiers. Moves
// complete when the test says so.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "manage/plan_executor.h"

namespace sentinel::manage::test {

struct RequestedMove {
  ObjectRef ref;
  uint64_t bytes = 0;
  Tier to = Tier::kSlow;
};

class FakeSink : public MoveSink {
 public:
  explicit FakeSink(uint64_t budget) : budget_(budget) {}

  bool request_move(ObjectRef ref, uint64_t bytes, Tier to) override {
    ++requests;
    if (refuse_all) return false;
    if (to == Tier::kFast) {
      if (fast + bytes > budget_) return false;
      fast += bytes;
    }
    queue.push_back({ref, bytes, to});
    issued.push_back({ref, bytes, to});
    peak_fast = fast > peak_fast ? fast : peak_fast;
    return true;
  }
  // A birth on the fast tier, as the placer would reserve it (false: the budget is full).
  bool birth_fast(uint64_t bytes) {
    if (fast + bytes > budget_) return false;
    fast += bytes;
    peak_fast = fast > peak_fast ? fast : peak_fast;
    return true;
  }
  void free_fast(uint64_t bytes) { fast -= bytes; }
  // Completes the oldest queued move (first in, first out) and reports it to the executor.
  RequestedMove complete_next(PlanExecutor& ex, bool moved = true) {
    RequestedMove m = queue.front();
    queue.pop_front();
    if (m.to == Tier::kSlow && moved) fast -= m.bytes;    // an eviction leaves fast memory when done
    if (m.to == Tier::kFast && !moved) fast -= m.bytes;   // a failed prefetch gives its room back
    ex.on_move_done(m.ref, m.to, moved);
    return m;
  }

  uint64_t budget_;
  uint64_t fast = 0;
  uint64_t peak_fast = 0;
  uint64_t requests = 0;
  bool refuse_all = false;
  std::deque<RequestedMove> queue;
  std::vector<RequestedMove> issued;
};

}  // namespace sentinel::manage::test
