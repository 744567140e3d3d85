#include "topo/topology.h"

#include <gtest/gtest.h>
#include <numa.h>

#include "fake_sysfs.h"
#include "topo/sysfs.h"

namespace sentinel::topo {
namespace {

using testing::FakeSysfs;

Topology detect_ok(const TopologyOptions& o) {
  Topology t;
  std::string error;
  EXPECT_TRUE(detect_topology(o, &t, &error)) << error;
  return t;
}

TopologyOptions opts(const FakeSysfs& fs) {
  TopologyOptions o;
  o.sysfs_root = fs.root();
  return o;
}

void two_nodes_cpuless(FakeSysfs& fs) {
  fs.set_online("0-1");
  fs.add_node(0, 2048, 1900, "0-1", {10, 30});
  fs.add_node(1, 4096, 4000, "", {30, 10});
}

TEST(IdList, ParsesRangesAndRejectsGarbage) {
  std::vector<int> ids;
  ASSERT_TRUE(parse_id_list("0-3,8,10-11", &ids));
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(format_id_list(ids), "0-3,8,10-11");
  ASSERT_TRUE(parse_id_list("", &ids));
  EXPECT_TRUE(ids.empty());
  EXPECT_FALSE(parse_id_list("3-1", &ids));
  EXPECT_FALSE(parse_id_list("a", &ids));
  EXPECT_FALSE(parse_id_list("1-", &ids));
}

TEST(Meminfo, ReadsKilobytes) {
  EXPECT_EQ(meminfo_bytes("Node 0 MemTotal:  100 kB\nNode 0 MemFree:  7 kB\n", "MemFree"), 7u * 1024);
  EXPECT_FALSE(meminfo_bytes("Node 0 MemTotal:  100 kB\n", "MemFree").has_value());
}

TEST(Topology, SingleNodeMeansNoPlacement) {
  FakeSysfs fs;
  fs.set_online("0");
  fs.add_node(0, 8192, 4096, "0-3", {10});
  Topology t = detect_ok(opts(fs));
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].total_bytes, 8192ull << 20);
  EXPECT_EQ(t.nodes[0].free_bytes, 4096ull << 20);
  EXPECT_EQ(t.nodes[0].cpus.size(), 4u);
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_EQ(t.slow_node, -1);
  EXPECT_FALSE(t.tiered());
  EXPECT_NE(t.reason.find("single node: no placement, no migration"), std::string::npos) << t.reason;
}

TEST(Topology, CpulessNodeIsSlow) {
  FakeSysfs fs;
  two_nodes_cpuless(fs);
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_EQ(t.slow_node, 1);
  EXPECT_TRUE(t.tiered());
  EXPECT_EQ(t.distance(0, 1), 30);
  EXPECT_NE(t.reason.find("no CPUs"), std::string::npos) << t.reason;
  EXPECT_NE(t.reason.find("distance 30"), std::string::npos) << t.reason;
}

TEST(Topology, CpulessNodeListedFirstIsStillSlow) {
  FakeSysfs fs;
  fs.set_online("0-1");
  fs.add_node(0, 4096, 4000, "", {10, 20});
  fs.add_node(1, 2048, 1900, "0-7", {20, 10});
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.fast_node, 1);
  EXPECT_EQ(t.slow_node, 0);
}

TEST(Topology, HigherMemoryTierIsSlow) {
  FakeSysfs fs;
  fs.set_online("0-2");
  fs.add_node(0, 1024, 1000, "0-1", {10, 21, 21});
  fs.add_node(1, 1024, 1000, "2-3", {21, 10, 21});
  fs.add_node(2, 1024, 1000, "4-5", {21, 21, 10});
  fs.set_tier(4, "0-1");
  fs.set_tier(22, "2");
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.nodes[2].memory_tier, 22);
  EXPECT_EQ(t.nodes[0].memory_tier, 4);
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_EQ(t.slow_node, 2);
  EXPECT_NE(t.reason.find("memory_tier22 below node 0's memory_tier4"), std::string::npos) << t.reason;
}

// The guest with SENTINEL_GUEST_NODE1=kmem, and a machine with Optane PMem or CXL memory onlined by
// daxctl: the slow node is named from the kernel's memory tiers, and its dax kmem device is named.
TEST(Topology, KmemNodeInALowerTierIsSlowAndNamed) {
  FakeSysfs fs;
  two_nodes_cpuless(fs);
  fs.set_tier(4, "0");
  fs.set_tier(22, "1");
  fs.write("bus/dax/drivers/kmem/dax0.0/target_node", "1\n");
  fs.write("bus/dax/drivers/kmem/new_id", "");  // the driver directory's own files are not devices
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.nodes[1].dax_kmem, "dax0.0");
  EXPECT_EQ(t.nodes[0].dax_kmem, "");
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_EQ(t.slow_node, 1);
  EXPECT_NE(t.reason.find("the kernel's memory tiers put it in memory_tier22 below node 0's memory_tier4 "
                          "(dax0.0 onlined by dax kmem)"),
            std::string::npos)
      << t.reason;
}

// The tiers outrank every other sign: a CPU-less node of the DRAM tier (e.g. HBM, or the guest's plain
// node) farther away than a kmem node still is not the slow node; of two lower tiers the nearer wins.
TEST(Topology, NearestLowerTierWinsOverOtherEvidence) {
  FakeSysfs fs;
  fs.set_online("0-3");
  fs.add_node(0, 2048, 2000, "0-3", {10, 40, 20, 30});
  fs.add_node(1, 2048, 2000, "", {40, 10, 40, 40});   // no CPUs, far, worse HMAT, but DRAM tier
  fs.add_node(2, 4096, 4000, "4-7", {20, 40, 10, 30});  // CPUs, in the kmem tier
  fs.add_node(3, 8192, 8000, "", {30, 40, 30, 10});   // no CPUs, in a tier below that
  fs.set_hmat(0, 100, 20000);
  fs.set_hmat(1, 400, 5000);
  fs.set_tier(4, "0-1");
  fs.set_tier(22, "2");
  fs.set_tier(30, "3");
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_EQ(t.slow_node, 2) << t.reason;
  EXPECT_NE(t.reason.find("memory_tier22"), std::string::npos) << t.reason;
}

// One tier for every node (the guest's plain node 1): the old evidence decides, and the reason says
// the kernel does not tier them.
TEST(Topology, SameTierFallsBackToEvidenceAndSaysSo) {
  FakeSysfs fs;
  two_nodes_cpuless(fs);
  fs.set_tier(4, "0-1");
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.slow_node, 1);
  EXPECT_NE(t.reason.find("no CPUs"), std::string::npos) << t.reason;
  EXPECT_NE(t.reason.find("memory_tier4 like node 0 (the kernel does not tier them)"), std::string::npos)
      << t.reason;
  // Two CPU nodes in one tier and nothing else to tell them apart: still "no sign", with the tier note.
  FakeSysfs plain;
  plain.set_online("0-1");
  plain.add_node(0, 1024, 1000, "0", {10, 10});
  plain.add_node(1, 1024, 1000, "1", {10, 10});
  plain.set_tier(4, "0-1");
  t = detect_ok(opts(plain));
  EXPECT_NE(t.reason.find("no sign that it is slower"), std::string::npos) << t.reason;
}

TEST(Topology, WorseHmatIsSlowAndBetterHmatIsFast) {
  FakeSysfs fs;
  fs.set_online("0-1");
  fs.add_node(0, 1024, 1000, "0", {10, 20});
  fs.add_node(1, 1024, 1000, "1", {20, 10});
  fs.set_hmat(0, 250, 8000);
  fs.set_hmat(1, 90, 40000);
  Topology t = detect_ok(opts(fs));
  ASSERT_TRUE(t.nodes[0].hmat.present);
  EXPECT_EQ(t.nodes[0].hmat.read_latency_ns, 250u);
  EXPECT_EQ(t.nodes[1].hmat.read_bandwidth_mbps, 40000u);
  EXPECT_EQ(t.fast_node, 1);
  EXPECT_EQ(t.slow_node, 0);
  EXPECT_NE(t.reason.find("HMAT read latency 250 ns vs 90 ns"), std::string::npos) << t.reason;
}

TEST(Topology, NoEvidenceStillPicksTheOtherNodeAndSaysSo) {
  FakeSysfs fs;
  fs.set_online("0-1");
  fs.add_node(0, 1024, 1000, "0", {10, 10});
  fs.add_node(1, 1024, 1000, "1", {10, 10});
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_EQ(t.slow_node, 1);
  EXPECT_NE(t.reason.find("no sign that it is slower"), std::string::npos) << t.reason;
}

TEST(Topology, MemorylessNodeIsNeverChosen) {
  FakeSysfs fs;
  fs.set_online("0-1");
  fs.add_node(0, 1024, 1000, "0", {10, 20});
  fs.add_node(1, 0, 0, "1", {20, 10});  // CPUs without memory
  Topology t = detect_ok(opts(fs));
  EXPECT_EQ(t.fast_node, 0);
  EXPECT_FALSE(t.tiered());
}

TEST(Topology, ValidOverridesAreUsed) {
  FakeSysfs fs;
  two_nodes_cpuless(fs);
  TopologyOptions o = opts(fs);
  o.fast_override = "1";
  o.slow_override = "0";
  Topology t = detect_ok(o);
  EXPECT_EQ(t.fast_node, 1);
  EXPECT_EQ(t.slow_node, 0);
  EXPECT_NE(t.reason.find("SENTINEL_FAST_NODE"), std::string::npos);
  // Only the slow node given: the fast one is chosen among the others.
  o.fast_override.reset();
  o.slow_override = "0";
  t = detect_ok(o);
  EXPECT_EQ(t.fast_node, 1);
  EXPECT_EQ(t.slow_node, 0);
}

TEST(Topology, BadOverridesAreRejected) {
  FakeSysfs fs;
  two_nodes_cpuless(fs);
  fs.set_online("0-2");
  fs.add_node(2, 0, 0, "", {30, 30, 10});
  struct Case {
    const char* fast;
    const char* slow;
    const char* message;
  } cases[] = {
      {"x", nullptr, "not a node number"},  {"-1", nullptr, "not a node number"},
      {nullptr, "7", "no such node"},       {nullptr, "2", "node has no memory"},
      {"1", "1", "same node"},              {"", nullptr, "not a node number"},
  };
  for (const auto& c : cases) {
    TopologyOptions o = opts(fs);
    if (c.fast) o.fast_override = c.fast;
    if (c.slow) o.slow_override = c.slow;
    Topology t;
    std::string error;
    EXPECT_FALSE(detect_topology(o, &t, &error)) << (c.fast ? c.fast : "-") << "/" << (c.slow ? c.slow : "-");
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

TEST(Topology, MissingTreeIsAnError) {
  TopologyOptions o;
  o.sysfs_root = "/nonexistent-sentinel-root";
  Topology t;
  std::string error;
  EXPECT_FALSE(detect_topology(o, &t, &error));
  EXPECT_NE(error.find("no NUMA nodes"), std::string::npos) << error;
}

TEST(Topology, RealSystemAgreesWithLibnuma) {
  if (numa_available() < 0) GTEST_SKIP() << "no NUMA support";
  Topology t = detect_ok(TopologyOptions{});
  int memory_nodes = 0;
  for (int n = 0; n <= numa_max_node(); ++n) memory_nodes += numa_node_size64(n, nullptr) > 0;
  EXPECT_EQ(t.tiered(), memory_nodes >= 2) << t.reason;
  ASSERT_NE(t.node(t.fast_node), nullptr);
  EXPECT_GT(t.node(t.fast_node)->total_bytes, 0u);
  EXPECT_EQ(t.source, "sysfs+libnuma");
}

}  // namespace
}  // namespace sentinel::topo
