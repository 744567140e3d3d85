// Guest test (a), under LD_PRELOAD=libsentinel.so with SENTINEL_FAST_BUDGET set: every object lands,
// page by page (move_pages query), on the node Sentinel says it placed it on (sentinel_object_node),
// through every allocation entry point, for fresh and for recycled extents; both nodes are used and
// the objects on node 0 fit in the budget.
#include <malloc.h>

#include <cstdint>

#include "place_probe.h"

using namespace place_probe;

namespace {

constexpr size_t kSizes[] = {64 << 10, 100 << 10, 1 << 20, (3 << 20) + 4096, 8 << 20, 300 << 10};
constexpr int kObjects = 60;  // about 190 MB in total

struct Obj {
  void* p = nullptr;
  size_t size = 0;
  uint32_t seed = 0;
};
Obj g_objs[kObjects];

void* allocate(int i, size_t size) {
  void* p = nullptr;
  switch (i % 4) {
    case 0: p = std::malloc(size); break;
    case 1: p = std::calloc(1, size); break;
    case 2:
      if (posix_memalign(&p, 2 << 20, size) != 0) p = nullptr;
      break;
    case 3: p = aligned_alloc(4096, size); break;
  }
  PROBE_CHECK(p != nullptr, "allocation %d of %zu bytes failed", i, size);
  if (i % 4 == 1) {
    for (size_t off = 0; off < size; off += 4096) PROBE_CHECK(static_cast<char*>(p)[off] == 0, "calloc not zeroed");
  }
  return p;
}

// Checks every live object; returns the extent bytes of the objects on node 0.
uint64_t verify_all(ObjectNodeFn node_of, const char* round, int* on0, int* on1) {
  uint64_t fast_extent_bytes = 0;
  *on0 = *on1 = 0;
  for (int i = 0; i < kObjects; ++i) {
    const Obj& o = g_objs[i];
    if (o.p == nullptr) continue;
    const int node = node_of(o.p);
    PROBE_CHECK(node == 0 || node == 1, "%s: object %d: sentinel_object_node says %d", round, i, node);
    const NodePages pages = node_pages(o.p, o.size);
    const uint64_t want = (o.size + 4095) / 4096;
    const uint64_t on_node = node == 0 ? pages.n0 : pages.n1;
    PROBE_CHECK(on_node == want, "%s: object %d (%zu bytes) placed on node %d: %llu of %llu pages there "
                "(n0 %llu n1 %llu absent %llu)", round, i, o.size, node,
                (unsigned long long)on_node, (unsigned long long)want, (unsigned long long)pages.n0,
                (unsigned long long)pages.n1, (unsigned long long)pages.absent);
    PROBE_CHECK(intact(o.p, o.size, o.seed), "%s: object %d lost its contents", round, i);
    if (node == 0) {
      ++*on0;
      fast_extent_bytes += malloc_usable_size(o.p);
    } else {
      ++*on1;
    }
  }
  return fast_extent_bytes;
}

}  // namespace

int main() {
  require_guest();
  const ObjectNodeFn node_of = object_node_fn();
  const sentinel::place::BudgetSpec budget = budget_from_env();
  PROBE_CHECK(budget.kind == sentinel::place::BudgetKind::kBytes, "this test wants a byte budget");

  int stack_var = 0;
  PROBE_CHECK(node_of(&stack_var) == -1, "a stack address is not an object");
  void* small = std::malloc(100);
  PROBE_CHECK(node_of(small) == -1, "a small block is not an object");
  std::free(small);

  uint32_t seed = 1;
  for (int i = 0; i < kObjects; ++i) {
    g_objs[i].size = kSizes[i % (sizeof kSizes / sizeof kSizes[0])];
    g_objs[i].p = allocate(i, g_objs[i].size);
    g_objs[i].seed = seed++;
    fill(g_objs[i].p, g_objs[i].size, g_objs[i].seed);
  }
  int on0 = 0, on1 = 0;
  uint64_t fast = verify_all(node_of, "fresh extents", &on0, &on1);
  std::printf("fresh: %d objects on node 0 (%llu extent bytes, budget %llu), %d on node 1\n", on0,
              (unsigned long long)fast, (unsigned long long)budget.bytes, on1);
  PROBE_CHECK(on0 > 0 && on1 > 0, "objects on both nodes expected (node 0: %d, node 1: %d)", on0, on1);
  PROBE_CHECK(fast <= budget.bytes, "node-0 objects take %llu bytes, budget %llu", (unsigned long long)fast,
              (unsigned long long)budget.bytes);

  // Free every other object (fast and slow ones), then allocate the same sizes again: these come from
  // the per-pool caches, or are carved fresh when the wanted pool's cache is empty.
  for (int round = 0; round < 3; ++round) {
    for (int i = round % 2; i < kObjects; i += 2) {
      std::free(g_objs[i].p);
      g_objs[i].p = nullptr;
    }
    for (int i = round % 2; i < kObjects; i += 2) {
      g_objs[i].p = allocate(i + round, g_objs[i].size);
      g_objs[i].seed = seed++;
      fill(g_objs[i].p, g_objs[i].size, g_objs[i].seed);
    }
    fast = verify_all(node_of, "recycled extents", &on0, &on1);
    std::printf("round %d: %d on node 0 (%llu bytes), %d on node 1\n", round, on0, (unsigned long long)fast, on1);
    PROBE_CHECK(fast <= budget.bytes, "node-0 objects take %llu bytes, budget %llu", (unsigned long long)fast,
                (unsigned long long)budget.bytes);
  }

  // realloc: a grown object moves to a new extent, which must also be placed where Sentinel says.
  void* grown = std::realloc(g_objs[0].p, 6 << 20);
  PROBE_CHECK(grown != nullptr, "realloc failed");
  PROBE_CHECK(intact(grown, g_objs[0].size, g_objs[0].seed), "realloc lost the contents");
  g_objs[0].p = grown;
  g_objs[0].size = 6 << 20;
  g_objs[0].seed = seed++;
  fill(grown, g_objs[0].size, g_objs[0].seed);
  verify_all(node_of, "after realloc", &on0, &on1);

  for (Obj& o : g_objs) std::free(o.p);
  std::printf("OK: every object's pages are on the node Sentinel placed it on\n");
  return 0;
}
