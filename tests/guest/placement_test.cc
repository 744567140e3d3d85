// In the guest: memory bound to node 1 lands on node 1 (per page), and topology detection takes
// node 0 as fast and the CPU-less node 1 as slow.
#include <numaif.h>

#include "guest_util.h"
#include "topo/slow_arena.h"
#include "topo/topology.h"

namespace sentinel {
namespace {

using migrate::testing::Mapping;
using migrate::testing::page_nodes;

TEST(GuestPlacement, MbindToNode1LandsOnNode1) {
  SENTINEL_REQUIRE_TWO_NODES();
  Mapping m(32 << 20);
  ASSERT_TRUE(m.ok());
  unsigned long mask = 1ul << 1;
  ASSERT_EQ(mbind(m.addr, m.len, MPOL_BIND, &mask, 8 * sizeof(mask), 0), 0);
  m.fill(5);
  auto nodes = page_nodes(m.addr, m.len);
  ASSERT_EQ(nodes.size(), m.len / 4096);
  for (size_t i = 0; i < nodes.size(); ++i) ASSERT_EQ(nodes[i], 1) << "page " << i;
  EXPECT_TRUE(m.check(5));
}

TEST(GuestPlacement, SlowArenaPagesAreOnNode1) {
  SENTINEL_REQUIRE_TWO_NODES();
  std::string error;
  auto arena = topo::SlowArena::create(1, 16 << 20, &error);
  ASSERT_NE(arena, nullptr) << error;
  for (int i = 0; i < 100; ++i) {
    char* p = static_cast<char*>(arena->alloc(20000));
    ASSERT_NE(p, nullptr);
    std::memset(p, i, 20000);
    for (int n : page_nodes(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095}), 20000))
      EXPECT_EQ(n, 1);
  }
}

TEST(GuestTopology, CpulessNode1IsSlowWithHmatReason) {
  SENTINEL_REQUIRE_TWO_NODES();
  topo::Topology t;
  std::string error;
  ASSERT_TRUE(topo::detect_topology(topo::TopologyOptions{}, &t, &error)) << error;
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_EQ(t.slow_node, 1);
  EXPECT_NE(t.reason.find("no CPUs"), std::string::npos) << t.reason;
  const topo::NodeInfo* slow = t.node(1);
  ASSERT_NE(slow, nullptr);
  EXPECT_TRUE(slow->cpus.empty());
  if (slow->hmat.present) {  // numa-guest.sh describes node 1 as 300 ns vs 100 ns
    EXPECT_NE(t.reason.find("HMAT read latency"), std::string::npos) << t.reason;
  }
  std::printf("topology in the guest: %s\n", t.reason.c_str());
}

}  // namespace
}  // namespace sentinel
