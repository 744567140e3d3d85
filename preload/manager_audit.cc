// Managed mode's placement audit (SENTINEL_PLACEMENT_CHECK): whether the kernel has the planned objects'
// pages where the plan wants them. Caller holds g_manager_mu (manager_state.h).
#include <algorithm>
#include <vector>

#include "manager_state.h"
#include "os/os.h"
#include "runtime_state.h"

namespace sentinel::rt::managed {

// Where the kernel really has the pages of every live object the plan has an opinion on: a sample of pages
// per object, queried with move_pages (nodes = NULL). Objects with a move running or waiting are in transit
// and not counted.
void check_placement(Manager& m) {
  std::vector<void*> pages;
  std::vector<int> status;
  m.executor->for_each_live([&](ObjectRef ref, uint64_t tag, uint64_t bytes, Tier, bool moving) {
    // Settled objects only: one with a move running or waiting is in transit, by the plan's own schedule.
    Tier want;
    if (moving || m.executor->move_waiting(tag) || !m.executor->intended_tier(tag, &want) ||
        m.executor->plan()->object(tag) == nullptr) {
      return;
    }
    const ObjectRecord& r = g_state.heap.record(ref.slot);
    if (r.generation != ref.generation || r.state.load(std::memory_order_acquire) != ExtentState::kLive) return;
    constexpr uint64_t kSamples = 16;
    const uint64_t npages = bytes / kPageSize;
    pages.clear();
    for (uint64_t i = 0; i < kSamples && i < npages; ++i) {
      pages.push_back(reinterpret_cast<void*>(r.start + (i * npages / std::min(kSamples, npages)) * kPageSize));
    }
    status.assign(pages.size(), -1);
    if (pages.empty() || os::move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) return;
    const int want_node = g_state.placer.node_of_pool(pool_of(want));
    uint64_t present = 0, matching = 0;
    for (int st : status) {
      if (st < 0) continue;  // not touched yet: no page to be anywhere
      ++present;
      if (st == want_node) ++matching;
    }
    if (present == 0) return;
    m.checked_bytes += bytes;
    m.matching_bytes += bytes * matching / present;
  });
}

}  // namespace sentinel::rt::managed
