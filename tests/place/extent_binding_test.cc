// Binding extents before first touch, checked against the kernel (get_mempolicy, move_pages query).
// On a one-node machine node 0 is real and node 1 is a fake slow node that the kernel refuses; in
// the two-node guest (ctest -L guest) the node-1 cases run for real.
#include "place/extent_binding.h"

#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <numa.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/object_heap.h"
#include "place/budget_placer.h"

namespace sentinel::place {
namespace {

constexpr size_t kPage = 4096;

bool have_node1() { return numa_available() >= 0 && numa_max_node() >= 1 && numa_node_size64(1, nullptr) > 0; }

// A page that is not present: -ENOENT, or -EFAULT on kernels before 6.x's fix (the guest's 6.1).
bool absent(int status) { return status == -ENOENT || status == -EFAULT; }

struct Region {
  explicit Region(size_t n) : len(n) {
    addr = static_cast<char*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Region() {
    if (addr != MAP_FAILED) munmap(addr, len);
  }
  char* addr;
  size_t len;
};

void touch(char* p, size_t len, char v) {
  for (size_t off = 0; off < len; off += kPage) p[off] = v;
}

// The node of the (present) page at p, as get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) reports it.
int node_by_get_mempolicy(const void* p) {
  int node = -1;
  if (syscall(SYS_get_mempolicy, &node, nullptr, 0, p, MPOL_F_NODE | MPOL_F_ADDR) != 0) return -errno;
  return node;
}

void expect_all_on(const char* p, size_t len, int node) {
  std::vector<int> status(len / kPage, -1000);
  ASSERT_TRUE(page_nodes(p, len, status.data(), status.size()));
  for (size_t i = 0; i < status.size(); ++i) ASSERT_EQ(status[i], node) << "page " << i;
  for (size_t off = 0; off < len; off += 16 * kPage) EXPECT_EQ(node_by_get_mempolicy(p + off), node);
  uint64_t counts[2] = {};
  uint64_t absent = 0;
  ASSERT_TRUE(count_pages(p, len, counts, 1, &absent));
  EXPECT_EQ(counts[node], len / kPage);
  EXPECT_EQ(absent, 0u);
}

TEST(ExtentBinding, PreferredNode0BeforeFirstTouch) {
  Region r(64 * kPage);
  ASSERT_NE(r.addr, MAP_FAILED);
  std::string_view why;
  int err = 0;
  ASSERT_TRUE(bind_range(r.addr, r.len, 0, BindMode::kPreferred, false, &why, &err)) << why << " " << err;
  int mode = -1, node = -1;
  ASSERT_TRUE(query_policy(r.addr + 5 * kPage, &mode, &node));
  EXPECT_EQ(mode, MPOL_PREFERRED);
  EXPECT_EQ(node, 0);
  // Not touched yet: no page is present.
  std::vector<int> status(r.len / kPage);
  ASSERT_TRUE(page_nodes(r.addr, r.len, status.data(), status.size()));
  for (int s : status) EXPECT_TRUE(absent(s)) << s;
  touch(r.addr, r.len, 1);
  expect_all_on(r.addr, r.len, 0);
}

TEST(ExtentBinding, StrictBindNode0) {
  Region r(32 * kPage);
  ASSERT_TRUE(bind_range(r.addr, r.len, 0, BindMode::kBind, false, nullptr, nullptr));
  int mode = -1, node = -1;
  ASSERT_TRUE(query_policy(r.addr, &mode, &node));
  EXPECT_EQ(mode, MPOL_BIND);
  EXPECT_EQ(node, 0);
  touch(r.addr, r.len, 2);
  expect_all_on(r.addr, r.len, 0);
}

TEST(ExtentBinding, RejectsBadArguments) {
  Region r(4 * kPage);
  std::string_view why;
  int err = 0;
  EXPECT_FALSE(bind_range(r.addr + 1, kPage, 0, BindMode::kPreferred, false, &why, &err));
  EXPECT_EQ(err, EINVAL);
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(bind_range(r.addr, kPage, -1, BindMode::kPreferred, false, &why, &err));
  EXPECT_FALSE(bind_range(r.addr, kPage, kMaxNodeId + 1, BindMode::kPreferred, false, &why, &err));
  EXPECT_FALSE(bind_range(r.addr, 0, 0, BindMode::kPreferred, false, &why, &err));
}

TEST(ExtentBinding, Node1WhereItExistsAndAClearErrorWhereNot) {
  Region r(16 * kPage);
  std::string_view why;
  int err = 0;
  const bool ok = bind_range(r.addr, r.len, 1, BindMode::kPreferred, false, &why, &err);
  if (!have_node1()) {
    EXPECT_FALSE(ok);
    EXPECT_EQ(err, EINVAL);
    EXPECT_NE(why.find("node"), std::string_view::npos) << why;
    return;
  }
  ASSERT_TRUE(ok) << why;
  touch(r.addr, r.len, 3);
  expect_all_on(r.addr, r.len, 1);
}

TEST(ExtentBinding, RebindDiscardingDropsOldPagesAndContents) {
  Region r(16 * kPage);
  ASSERT_TRUE(bind_range(r.addr, r.len, 0, BindMode::kPreferred, false, nullptr, nullptr));
  std::memset(r.addr, 0x5a, r.len);
  const int target = have_node1() ? 1 : 0;
  std::string_view why;
  ASSERT_TRUE(rebind_discarding(r.addr, r.len, target, BindMode::kPreferred, &why, nullptr)) << why;
  std::vector<int> status(r.len / kPage);
  ASSERT_TRUE(page_nodes(r.addr, r.len, status.data(), status.size()));
  for (int s : status) EXPECT_TRUE(absent(s)) << s;  // dropped, not moved
  for (size_t i = 0; i < r.len; i += 512) ASSERT_EQ(r.addr[i], 0);
  touch(r.addr, r.len, 4);
  expect_all_on(r.addr, r.len, target);
}

// The whole path the runtime will take: choose a pool, take an extent of that pool from the real
// object heap, bind it, touch it; small and transparent-huge-page extents alike.
TEST(ExtentBinding, PlacerBindsHeapExtentsBeforeFirstTouch) {
  ObjectHeap heap;
  ASSERT_TRUE(heap.init(1ull << 30, 1024));
  BudgetPlacer placer;
  PlacerConfig c;
  c.fast_node = 0;
  c.slow_node = 1;  // fake on a one-node machine
  c.budget = {BudgetKind::kBytes, 8ull << 20, 0};
  ASSERT_TRUE(placer.configure(c).is_ok());
  for (uint64_t size : {uint64_t{100} << 10, uint64_t{4} << 20}) {
    const Decision d = placer.choose(extent_bytes_for(size));
    ASSERT_EQ(d.pool, kFastPool);
    bool zeroed = false;
    const uint32_t slot = heap.allocate(size, kPage, d.pool, &zeroed);
    ASSERT_NE(slot, kNoSlot);
    ObjectRecord& rec = heap.record(slot);
    char* p = reinterpret_cast<char*>(rec.start);
    std::string_view why;
    ASSERT_TRUE(placer.bind(p, rec.extent_bytes, d, &why)) << why;
    touch(p, rec.extent_bytes, 7);
    expect_all_on(p, rec.extent_bytes, 0);
  }
  // Over budget: the slow node. Here the kernel refuses the fake node and the failure is counted.
  const Decision d = placer.choose(extent_bytes_for(8ull << 20));
  ASSERT_EQ(d.pool, kSlowPool);
  bool zeroed = false;
  const uint32_t slot = heap.allocate(8ull << 20, kPage, d.pool, &zeroed);
  ASSERT_NE(slot, kNoSlot);
  ObjectRecord& rec = heap.record(slot);
  std::string_view why;
  const bool ok = placer.bind(reinterpret_cast<void*>(rec.start), rec.extent_bytes, d, &why);
  const PlacerStats s = placer.stats();
  EXPECT_EQ(s.binds, 3u);
  if (have_node1()) {
    ASSERT_TRUE(ok) << why;
    touch(reinterpret_cast<char*>(rec.start), rec.extent_bytes, 8);
    expect_all_on(reinterpret_cast<char*>(rec.start), rec.extent_bytes, 1);
    EXPECT_EQ(s.bind_failures, 0u);
  } else {
    EXPECT_FALSE(ok);
    EXPECT_EQ(s.bind_failures, 1u);
    EXPECT_EQ(s.last_bind_errno, EINVAL);
  }
  heap.destroy();
}

}  // namespace
}  // namespace sentinel::place
