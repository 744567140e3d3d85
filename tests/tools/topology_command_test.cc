// `sentinel topology` (tools/sentinel/topology_command.cc) on faked sysfs trees.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_sysfs.h"
#include "run_sentinel.h"

namespace sentinel::cli {
namespace {

int run(std::vector<std::string> args, std::string* out) {
  args.insert(args.begin(), "topology");
  std::string err;
  return test::run_sentinel(args, out, &err);
}

TEST(TopologyCli, HelpExitsZero) {
  std::string out;
  EXPECT_EQ(run({"--help"}, &out), 0);
  EXPECT_NE(out.find("Usage: sentinel topology"), std::string::npos);
  EXPECT_NE(out.find("--sysfs-root"), std::string::npos);
}

TEST(TopologyCli, UnknownArgumentIsUsageError) {
  std::string out;
  EXPECT_EQ(run({"--bogus"}, &out), 2);
  EXPECT_EQ(run({"--fast"}, &out), 2);
}

TEST(TopologyCli, TextNamesFastAndSlowAndWhy) {
  topo::testing::FakeSysfs fs;
  fs.set_online("0-1");
  fs.add_node(0, 2048, 1024, "0-1", {10, 30});
  fs.add_node(1, 256, 200, "", {30, 10});
  std::string out;
  ASSERT_EQ(run({"--sysfs-root", fs.root()}, &out), 0);
  EXPECT_NE(out.find("fast node: 0"), std::string::npos) << out;
  EXPECT_NE(out.find("slow node: 1"), std::string::npos) << out;
  EXPECT_NE(out.find("no CPUs"), std::string::npos) << out;
  EXPECT_NE(out.find("256 MiB"), std::string::npos) << out;
}

TEST(TopologyCli, JsonListsEveryNode) {
  topo::testing::FakeSysfs fs;
  fs.set_online("0-1");
  fs.add_node(0, 2048, 1024, "0-1", {10, 30});
  fs.add_node(1, 256, 200, "", {30, 10});
  fs.set_hmat(1, 300, 5000);
  std::string out;
  ASSERT_EQ(run({"--json", "--sysfs-root", fs.root()}, &out), 0);
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["fast_node"], 0);
  EXPECT_EQ(j["slow_node"], 1);
  EXPECT_EQ(j["nodes"][1]["total_bytes"], 256ull << 20);
  EXPECT_EQ(j["nodes"][1]["hmat"]["read_latency_ns"], 300);
  EXPECT_EQ(j["nodes"][0]["distances"][1], 30);
  EXPECT_TRUE(j["tiered"].get<bool>());
}

TEST(TopologyCli, KmemNodeShowsItsTierAndDaxDevice) {
  topo::testing::FakeSysfs fs;
  fs.set_online("0-1");
  fs.add_node(0, 2048, 1024, "0-1", {10, 30});
  fs.add_node(1, 2048, 2000, "", {30, 10});
  fs.set_tier(4, "0");
  fs.set_tier(22, "1");
  fs.write("bus/dax/drivers/kmem/dax0.0/target_node", "1\n");
  std::string out;
  ASSERT_EQ(run({"--sysfs-root", fs.root()}, &out), 0);
  EXPECT_NE(out.find("dax0.0"), std::string::npos) << out;
  EXPECT_NE(out.find("slow node: 1"), std::string::npos) << out;
  EXPECT_NE(out.find("memory_tier22 below node 0's memory_tier4"), std::string::npos) << out;
  ASSERT_EQ(run({"--json", "--sysfs-root", fs.root()}, &out), 0);
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["nodes"][1]["memory_tier"], 22);
  EXPECT_EQ(j["nodes"][1]["dax_kmem"], "dax0.0");
  EXPECT_EQ(j["nodes"][0]["dax_kmem"], "");
}

TEST(TopologyCli, InvalidOverrideFails) {
  topo::testing::FakeSysfs fs;
  fs.set_online("0");
  fs.add_node(0, 2048, 1024, "0-1", {10});
  std::string out;
  EXPECT_EQ(run({"--sysfs-root", fs.root(), "--slow", "3"}, &out), 1);
}

}  // namespace
}  // namespace sentinel::cli
