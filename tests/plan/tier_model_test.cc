#include "plan/tier_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace sentinel {
namespace {

TEST(TierModel, PresetsAreValidAndUsePublishedFigures) {
  for (const auto& name : memory_system_preset_names()) {
    MemorySystem m;
    std::string err;
    ASSERT_TRUE(memory_system_preset(name, &m, &err)) << name << ": " << err;
    EXPECT_TRUE(validate_memory_system(m, &err)) << name << ": " << err;
  }
  MemorySystem m;
  ASSERT_TRUE(memory_system_preset("optane", &m, nullptr));
  EXPECT_DOUBLE_EQ(m.slow.latency_ns, 305.0);
  EXPECT_DOUBLE_EQ(m.slow.read_bw_gbps, 39.4);
  EXPECT_DOUBLE_EQ(m.slow.write_bw_gbps, 13.9);
  EXPECT_DOUBLE_EQ(m.migration_bw_gbps, 1.9);  // the emulator's move_pages, docs/tier-model.md
  EXPECT_DOUBLE_EQ(m.stream_share, 0.8);
  ASSERT_TRUE(memory_system_preset("dram", &m, nullptr));
  EXPECT_DOUBLE_EQ(m.migration_bw_gbps, 3.3);    // the published DRAM-to-DRAM figure
  ASSERT_TRUE(memory_system_preset("cxl-2m", &m, nullptr));
  EXPECT_DOUBLE_EQ(m.migration_bw_gbps, 11.0);
  EXPECT_DOUBLE_EQ(m.fast.latency_ns, 80.0);
  EXPECT_GT(m.read_penalty_ns(), 0.0);
  // One measured x8 expander: 250 vs 130 ns idle, 24 GB/s read, 21 GB/s at a 1:1 read:write mix.
  ASSERT_TRUE(memory_system_preset("cxl-x8", &m, nullptr));
  EXPECT_DOUBLE_EQ(m.slow.latency_ns - m.fast.latency_ns, 120.0);
  EXPECT_DOUBLE_EQ(m.slow.read_bw_gbps, 24.0);
  EXPECT_NEAR(2 / (1 / m.slow.read_bw_gbps + 1 / m.slow.write_bw_gbps), 21.0, 0.05);
  std::string err;
  EXPECT_FALSE(memory_system_preset("hbm", &m, &err));
  EXPECT_NE(err.find("hbm"), std::string::npos);
}

TEST(TierModel, ParsesKeyValueWithBaseAndComments) {
  MemorySystem m;
  ASSERT_TRUE(memory_system_preset("cxl", &m, nullptr));
  std::string err;
  ASSERT_TRUE(parse_memory_system("# my device\nbase = optane\nname = mine\n"
                                  "slow.latency_ns = 400  # slower\nmigration_bw_gbps=5.5\n",
                                  &m, &err)) << err;
  EXPECT_EQ(m.name, "mine");
  EXPECT_DOUBLE_EQ(m.slow.latency_ns, 400.0);
  EXPECT_DOUBLE_EQ(m.slow.read_bw_gbps, 39.4);  // from the optane base
  EXPECT_DOUBLE_EQ(m.migration_bw_gbps, 5.5);
}

TEST(TierModel, ParsesJson) {
  MemorySystem m;
  ASSERT_TRUE(memory_system_preset("cxl", &m, nullptr));
  std::string err;
  ASSERT_TRUE(parse_memory_system(R"({"slow.latency_ns": 250, "mlp": 4, "base": "dram",
                                      "slow.read_bw_gbps": 20})", &m, &err)) << err;
  EXPECT_DOUBLE_EQ(m.slow.latency_ns, 250.0);
  EXPECT_DOUBLE_EQ(m.slow.read_bw_gbps, 20.0);
  EXPECT_DOUBLE_EQ(m.mlp, 4.0);
}

TEST(TierModel, RejectsBadInputAndLeavesModelUnchanged) {
  MemorySystem m;
  ASSERT_TRUE(memory_system_preset("cxl", &m, nullptr));
  const MemorySystem before = m;
  const char* bad[] = {"slow.latency_ns = fast", "nonsense = 3", "just text", "mlp = 0",
                       "slow.latency_ns = 10",  // faster than DRAM
                       "slow.read_bw_gbps = 500", "migration_bw_gbps = -1", "{\"mlp\": [1]}",
                       "{not json", "base = nope", "slow.latency_ns = 1e999"};
  for (const char* text : bad) {
    std::string err;
    EXPECT_FALSE(parse_memory_system(text, &m, &err)) << text;
    EXPECT_FALSE(err.empty()) << text;
    EXPECT_EQ(m.slow.latency_ns, before.slow.latency_ns) << text;
    EXPECT_EQ(m.mlp, before.mlp) << text;
  }
}

TEST(TierModel, LoadsFilesAndResolvesNames) {
  std::string path = ::testing::TempDir() + "/tier_test.conf";
  {
    std::ofstream f(path);
    f << "slow.latency_ns = 300\n";
  }
  MemorySystem m;
  std::string err;
  ASSERT_TRUE(resolve_memory_system(path, &m, &err)) << err;
  EXPECT_DOUBLE_EQ(m.slow.latency_ns, 300.0);
  EXPECT_DOUBLE_EQ(m.slow.read_bw_gbps, 30.0);  // the cxl defaults
  ASSERT_TRUE(resolve_memory_system("optane", &m, &err));
  EXPECT_EQ(m.name, "optane");
  EXPECT_FALSE(resolve_memory_system("/nonexistent/tier.conf", &m, &err));
  EXPECT_NE(err.find("cannot open"), std::string::npos);
  std::remove(path.c_str());
  EXPECT_NE(describe_memory_system(m).find("305 ns"), std::string::npos);
}

}  // namespace
}  // namespace sentinel
