// Guest test (c), under LD_PRELOAD=libsentinel.so with a small SENTINEL_FAST_BUDGET and a small node 1
// (SENTINEL_GUEST_NODE1_MB=128): the program keeps far more object bytes live than the slow node can
// hold. It must keep running, every allocation must succeed and every object must keep its contents;
// the pages that do not fit on node 1 end up elsewhere (node 0) instead of the process being killed.
#include <cstdint>

#include "place_probe.h"

using namespace place_probe;

namespace {

constexpr int kObjects = 300;
constexpr size_t kObjectBytes = 2 << 20;  // 600 MiB live in total

void* g_objs[kObjects];

struct Tally {
  uint64_t n0 = 0, n1 = 0, absent = 0;
  int said_slow = 0;
};

Tally survey(ObjectNodeFn node_of, uint32_t seed_base, const char* what) {
  Tally t;
  for (int i = 0; i < kObjects; ++i) {
    PROBE_CHECK(intact(g_objs[i], kObjectBytes, seed_base + i), "%s: object %d lost its contents", what, i);
    const NodePages pages = node_pages(g_objs[i], kObjectBytes);
    t.n0 += pages.n0;
    t.n1 += pages.n1;
    t.absent += pages.absent;
    const int node = node_of(g_objs[i]);
    PROBE_CHECK(node == 0 || node == 1, "%s: sentinel_object_node says %d", what, node);
    t.said_slow += node == 1;
  }
  std::printf("%s: %d of %d objects placed slow; pages: node 0 %llu MiB, node 1 %llu MiB, absent %llu\n", what,
              t.said_slow, kObjects, (unsigned long long)(t.n0 >> 8), (unsigned long long)(t.n1 >> 8),
              (unsigned long long)t.absent);
  PROBE_CHECK(t.absent == 0, "%s: pages missing", what);
  return t;
}

}  // namespace

int main() {
  require_guest();
  const ObjectNodeFn node_of = object_node_fn();
  for (int round = 0; round < 2; ++round) {
    const uint32_t seed_base = 1000u * (round + 1);
    for (int i = 0; i < kObjects; ++i) {
      g_objs[i] = std::malloc(kObjectBytes);
      PROBE_CHECK(g_objs[i] != nullptr, "round %d: malloc %d failed", round, i);
      fill(g_objs[i], kObjectBytes, seed_base + i);
    }
    const Tally t = survey(node_of, seed_base, round == 0 ? "fresh" : "recycled");
    PROBE_CHECK(t.said_slow > kObjects / 2, "the small budget should send most objects slow (%d)", t.said_slow);
    PROBE_CHECK(t.n1 > 0, "nothing reached node 1");
    // Node 1 is smaller than the slow objects: the rest of their pages must have gone somewhere else.
    PROBE_CHECK(t.n0 > 0, "node 1 cannot hold %d MiB; some pages must be on node 0", t.said_slow * 2);
    for (int i = 0; i < kObjects; ++i) std::free(g_objs[i]);
  }
  std::printf("OK: slow node full, the program kept running and no object lost its contents\n");
  return 0;
}
