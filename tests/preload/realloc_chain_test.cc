// realloc of objects that outgrow their extents (realloc_chain, see there): content intact through every
// call, in track mode (pages moved with mremap into the new extent), under a fast budget in a dry run
// (pages of extents bound alike moved, others copied) and with mremap failing (fault injection: copied).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../common/temp_dir.h"

namespace {

nlohmann::json run_chain(const std::string& lib, const std::string& env, std::string* output) {
  sentinel::testing::TempDir dir("sentinel-realloc-chain");
  const std::string stats = dir.file("stats.json");
  const std::string command = "env LD_PRELOAD=" + lib + " SENTINEL_LOG=warn SENTINEL_STATS=" + stats + " " + env +
                              " " REALLOC_CHAIN " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return {};
  char line[512];
  while (std::fgets(line, sizeof line, p) != nullptr) *output += line;
  EXPECT_EQ(pclose(p), 0) << *output;
  std::ifstream in(stats);
  if (!in) return {};
  return nlohmann::json::parse(in);
}

TEST(ReallocChain, GrownObjectsKeepTheirBytesAndTheirPagesMove) {
  std::string output;
  const nlohmann::json j = run_chain(SENTINEL_LIB, "SENTINEL_MODE=track", &output);
  ASSERT_NE(output.find("ok"), std::string::npos) << output;
  ASSERT_FALSE(j.is_null()) << output;
  EXPECT_GT(j.at("realloc_remaps").get<uint64_t>(), 10u) << "large objects were copied, not remapped";
  EXPECT_GT(j.at("inplace_reallocs").get<uint64_t>(), 10u);
  EXPECT_EQ(j.at("invalid_frees").get<uint64_t>(), 0u);
  EXPECT_EQ(j.at("live_objects_at_exit").get<uint64_t>(), 0u);
}

TEST(ReallocChain, UnderABudgetInADryRun) {
  std::string output;
  const nlohmann::json j = run_chain(SENTINEL_LIB, "SENTINEL_MODE=track SENTINEL_DRY_RUN=1 SENTINEL_FAST_BUDGET=16M", &output);
  ASSERT_NE(output.find("ok"), std::string::npos) << output;
  ASSERT_FALSE(j.is_null()) << output;
  EXPECT_EQ(j.at("realloc_remaps").get<uint64_t>(), 0u) << "a dry run copies (its book does not follow mremap)";
  EXPECT_EQ(j.at("slow_live_bytes_at_exit").get<uint64_t>(), 0u);
  EXPECT_EQ(j.at("fast_live_bytes_at_exit").get<uint64_t>(), 0u);
  EXPECT_EQ(j.at("placer_release_errors").get<uint64_t>(), 0u);
}

TEST(ReallocChain, WhenTheKernelRefusesTheRemapTheBytesAreCopied) {
#ifndef SENTINEL_FAULTS_LIB
  GTEST_SKIP() << "built without SENTINEL_FAULT_INJECTION";
#else
  std::string output;
  const nlohmann::json j =
      run_chain(SENTINEL_FAULTS_LIB, "SENTINEL_MODE=track SENTINEL_FAULT_INJECT=7:1:mremap", &output);
  ASSERT_NE(output.find("ok"), std::string::npos) << output;
  ASSERT_FALSE(j.is_null()) << output;
  EXPECT_EQ(j.at("realloc_remaps").get<uint64_t>(), 0u);
#endif
}

}  // namespace
