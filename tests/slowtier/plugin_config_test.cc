#include "plugin_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

namespace sentinel::slowtier {
namespace {

bool parse(std::vector<const char*> args, PluginConfig* c, std::string* err) {
  return parse_plugin_args(static_cast<int>(args.size()), args.data(), c, err);
}

TEST(PluginConfig, PresetGivesTheTierModelsPublishedFigures) {
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(parse({"tier=optane", "node0_mb=2048", "node1_mb=1024"}, &c, &err)) << err;
  MemorySystem optane;
  ASSERT_TRUE(memory_system_preset("optane", &optane, &err));
  ClockParams p = clock_params(c);
  EXPECT_EQ(p.node[1].latency_ns, optane.slow.latency_ns);
  EXPECT_EQ(p.node[1].read_bw_gbps, optane.slow.read_bw_gbps);
  EXPECT_EQ(p.node[1].write_bw_gbps, optane.slow.write_bw_gbps);
  EXPECT_EQ(p.node[0].latency_ns, optane.fast.latency_ns);
  EXPECT_EQ(p.mlp, optane.mlp);
  EXPECT_EQ(c.node0_bytes, 2048ull << 20);
  EXPECT_EQ(c.node1_base, 4096ull << 20);  // QEMU 7.2 layout by default
  EXPECT_NE(parameters_json(c).find("\"slow_latency_ns\": 305"), std::string::npos);
}

TEST(PluginConfig, KmemLayoutPutsNode1AfterNode0) {
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(parse({"tier=cxl", "node0_mb=2048", "node1_mb=2176", "layout=kmem"}, &c, &err)) << err;
  EXPECT_EQ(c.layout, NodeMap::Layout::kKmem);
  EXPECT_EQ(c.node1_base, 2048ull << 20);
  EXPECT_NE(parameters_json(c).find("\"layout\": \"kmem\""), std::string::npos);
  ASSERT_TRUE(parse({"tier=cxl", "node0_mb=2048", "node1_mb=2048", "layout=plain"}, &c, &err)) << err;
  EXPECT_EQ(c.node1_base, 4096ull << 20);
  EXPECT_NE(parameters_json(c).find("\"layout\": \"plain\""), std::string::npos);
  // An explicit base still wins; a bad layout names the key.
  ASSERT_TRUE(parse({"tier=cxl", "node0_mb=256", "node1_mb=256", "layout=kmem", "node1_base_mb=300"}, &c, &err));
  EXPECT_EQ(c.node1_base, 300ull << 20);
  EXPECT_FALSE(parse({"tier=cxl", "node0_mb=256", "node1_mb=256", "layout=nvdimm"}, &c, &err));
  EXPECT_NE(err.find("layout"), std::string::npos);
}

TEST(PluginConfig, TierFileUsesTheReplayKeys) {
  char path[] = "/tmp/slowtier-tier-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fputs("base = optane\nslow.latency_ns = 500\n", f);
  std::fclose(f);
  std::string arg = std::string("tier=") + path;
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(parse({arg.c_str(), "node0_mb=256", "node1_mb=256", "cpi=0.5", "cache_kb=512"}, &c, &err))
      << err;
  std::remove(path);
  EXPECT_EQ(clock_params(c).node[1].latency_ns, 500.0);
  EXPECT_EQ(clock_params(c).node[1].read_bw_gbps, 39.4);
  EXPECT_EQ(c.cpi, 0.5);
  EXPECT_EQ(c.cache_bytes, 512u << 10);
}

TEST(PluginConfig, StreamAndStringKeys) {
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(parse({"tier=optane", "node0_mb=256", "node1_mb=256"}, &c, &err)) << err;
  EXPECT_EQ(c.stream.trackers, 16u);  // the stream model is on by default
  EXPECT_EQ(clock_params(c).string_bytes_per_cycle, 32.0);
  ASSERT_TRUE(parse({"tier=optane", "node0_mb=256", "node1_mb=256", "stream_trackers=0", "stream_train=3",
                     "stream_window=2", "string_bytes_per_cycle=0"}, &c, &err)) << err;
  EXPECT_EQ(c.stream.trackers, 0u);
  EXPECT_EQ(c.stream.train, 3u);
  EXPECT_EQ(c.stream.window, 2u);
  EXPECT_EQ(clock_params(c).string_bytes_per_cycle, 0.0);
  EXPECT_NE(parameters_json(c).find("\"stream_trackers\": 0"), std::string::npos);
  EXPECT_FALSE(parse({"tier=optane", "node0_mb=256", "node1_mb=256", "stream_window=0"}, &c, &err));
  EXPECT_NE(err.find("stream_window"), std::string::npos);
}

TEST(PluginConfig, ErrorsNameTheKey) {
  PluginConfig c;
  std::string err;
  EXPECT_FALSE(parse({"node0_mb=256", "node1_mb=256"}, &c, &err));
  EXPECT_NE(err.find("tier"), std::string::npos);
  EXPECT_FALSE(parse({"tier=nosuch", "node0_mb=256", "node1_mb=256"}, &c, &err));
  EXPECT_FALSE(parse({"tier=cxl", "node0_mb=256", "node1_mb=256", "cpi=-1"}, &c, &err));
  EXPECT_NE(err.find("cpi"), std::string::npos);
  EXPECT_FALSE(parse({"tier=cxl", "node0_mb=256", "node1_mb=256", "color=red"}, &c, &err));
  EXPECT_NE(err.find("color"), std::string::npos);
  EXPECT_FALSE(parse({"tier=cxl", "node0_mb=256"}, &c, &err));
  EXPECT_FALSE(parse({"tier=cxl", "node0_mb=256", "node1_mb=256", "node1_base_mb=100"}, &c, &err));
}

}  // namespace
}  // namespace sentinel::slowtier
