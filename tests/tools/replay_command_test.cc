// `sentinel replay` as the command parses it (tools/sentinel/replay_command.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_sentinel.h"

#include "plan/plan_io.h"
#include "plan/replay.h"
#include "plan/synthetic_profile.h"
#include "profile/profile_io.h"

namespace sentinel {
namespace {

int run(std::vector<std::string> args, std::string* out, std::string* err) {
  args.insert(args.begin(), "replay");
  return test::run_sentinel(args, out, err);
}

TEST(ReplayCli, TableHasEveryPolicyAndSaysTimesAreModeled) {
  std::string out, err;
  ASSERT_EQ(run({"synthetic:4", "--budget", "20%"}, &out, &err), 0) << err;
  for (const char* p : {"sentinel", "all-dram", "all-slow", "first-touch", "static-ratio", "reactive-hot", "static-best"})
    EXPECT_NE(out.find(p), std::string::npos) << p << "\n" << out;
  EXPECT_NE(out.find("modeled"), std::string::npos);
  EXPECT_EQ(out.find("BUDGET EXCEEDED"), std::string::npos) << out;
}

TEST(ReplayCli, JsonRowsFromAProfileFile) {
  DnnConfig c;
  c.layers = 3;
  StepProfile p = dnn_training_profile(c);
  const std::string path = ::testing::TempDir() + "/replay_cli_test.profile.json";
  std::string err;
  ASSERT_TRUE(write_profile_file(path, p, &err)) << err;
  const std::string plan_path = ::testing::TempDir() + "/replay_cli_test.plan.json";
  std::string out;
  ASSERT_EQ(run({path, "--json", "--tier", "optane", "--budget", "64M", "--write-plan", plan_path}, &out, &err), 0) << err;
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << out;
  ASSERT_EQ(j.size(), 7u);
  double dram_ratio = 0;
  for (const auto& row : j) {
    for (const char* key : {"policy", "step_time_ratio", "dram_peak_bytes", "migrated_bytes", "late_prefetches"})
      EXPECT_TRUE(row.contains(key)) << key;
    if (row["policy"] == "all-dram") dram_ratio = row["step_time_ratio"].get<double>();
    if (row["policy"] != "all-dram") {
      EXPECT_LE(row["dram_peak_bytes"].get<uint64_t>(), 64ull << 20);
    }
    EXPECT_GE(row["step_time_ratio"].get<double>(), 1.0 - 1e-9);
  }
  EXPECT_DOUBLE_EQ(dram_ratio, 1.0);
  // Every policy serves the same accesses, split between the tiers; all-DRAM sends none to the slow one.
  double total = -1;
  for (const auto& row : j) {
    const double slow = row["slow_accesses"].get<double>(), fast = row["fast_accesses"].get<double>();
    EXPECT_DOUBLE_EQ(row["slow_bytes"].get<double>(), slow * 64);
    if (total < 0) total = slow + fast;
    EXPECT_NEAR(slow + fast, total, total * 1e-12) << row["policy"];
    if (row["policy"] == "all-dram") EXPECT_EQ(slow, 0);
    if (row["policy"] == "all-slow") EXPECT_EQ(fast, 0);
  }
  EXPECT_GT(total, 0);
  Plan plan;
  EXPECT_TRUE(read_plan_file(plan_path, &plan, &err)) << err;
  EXPECT_EQ(plan.policy, "sentinel");
  EXPECT_EQ(plan.period, p.period);
  std::remove(path.c_str());
  std::remove(plan_path.c_str());
}

TEST(ReplayCli, SweepCoversFiveToHundredPercent) {
  std::string out, err;
  ASSERT_EQ(run({"synthetic:3", "--sweep", "--json"}, &out, &err), 0) << err;
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 20u);
  EXPECT_DOUBLE_EQ(j.front()["budget_fraction"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(j.back()["budget_fraction"].get<double>(), 1.0);
  for (const auto& pt : j) EXPECT_NE(pt["best_baseline"]["policy"], "sentinel");
  ASSERT_EQ(run({"synthetic:3", "--sweep"}, &out, &err), 0);
  EXPECT_NE(out.find("100%"), std::string::npos);
  EXPECT_EQ(out.find('{'), std::string::npos);  // a table without --json
  EXPECT_NE(out.find("modeled"), std::string::npos);
}

TEST(ReplayCli, SweepJsonCarriesTheOptimalRowApartFromTheBaselines) {
  std::string out, err;
  // A solver limit of 1 cell: every point says "too-large" at once (no solve), but has the row.
  ASSERT_EQ(run({"synthetic:2", "--sweep", "--json", "--optimal", "--optimal-max-cells", "1"}, &out, &err), 0) << err;
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << out;
  ASSERT_EQ(j.size(), 20u);
  for (const auto& pt : j) {
    ASSERT_TRUE(pt.contains("optimal"));
    EXPECT_EQ(pt["optimal"]["policy"], "optimal");
    EXPECT_EQ(pt["optimal"]["solver_status"], "too-large");
    EXPECT_NE(pt["best_baseline"]["policy"], "optimal");
  }
}

TEST(ReplayCli, OptimalRowCarriesTheSolverStatus) {
  std::string out, err;
  ASSERT_EQ(run({"synthetic:2", "--budget", "30%", "--tier", "optane", "--json", "--optimal", "--time-limit", "5"},
                &out, &err), 0) << err;
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << out;
  const nlohmann::json& opt = j.back();
  EXPECT_EQ(opt["policy"], "optimal");
  EXPECT_EQ(opt["budget_violations"], 0);
  for (const char* k : {"solver_status", "discrete_step_time_ns", "solver_bound_ns", "solver_gap", "solver_seconds",
                        "lower_bound_ns"})
    EXPECT_TRUE(opt.contains(k)) << k;
  const std::string status = opt["solver_status"];
  EXPECT_TRUE(status == "optimal" || status == "best-found") << status;
  // The discretised model has no fast pool: the fault time the replay adds is left out of the comparison.
  EXPECT_LE(opt["step_time_ns"].get<double>() - opt["fault_ns"].get<double>(),
            opt["discrete_step_time_ns"].get<double>() * (1 + 1e-9));
  EXPECT_GE(opt["step_time_ns"].get<double>(), opt["lower_bound_ns"].get<double>() * (1 - 1e-9));
  EXPECT_LE(opt["solver_bound_ns"].get<double>(), opt["discrete_step_time_ns"].get<double>() * (1 + 1e-9));
  // Too large: a clear message, no solve.
  ASSERT_EQ(run({"synthetic:4", "--optimal", "--optimal-max-cells", "10"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("too large"), std::string::npos) << out;
  EXPECT_EQ(run({"synthetic:2", "--optimal", "--time-limit", "-1"}, &out, &err), 2);
}

TEST(ReplayCli, ComputeScaleDividesPhaseDurationsOnly) {
  std::string out1, out4, err;
  ASSERT_EQ(run({"synthetic:3", "--json", "--tier", "optane"}, &out1, &err), 0) << err;
  ASSERT_EQ(run({"synthetic:3", "--json", "--tier", "optane", "--compute-scale", "4"}, &out4, &err), 0) << err;
  nlohmann::json a = nlohmann::json::parse(out1), b = nlohmann::json::parse(out4);
  auto row = [](const nlohmann::json& rows, const char* name) {
    for (const auto& r : rows)
      if (r["policy"] == name) return r;
    return nlohmann::json();
  };
  // All-DRAM is the sum of phase durations: a quarter. All-slow pays the same memory traffic on a
  // shorter step, so its ratio to all-DRAM cannot go down.
  EXPECT_NEAR(row(b, "all-dram")["step_time_ns"].get<double>(), row(a, "all-dram")["step_time_ns"].get<double>() / 4,
              row(a, "all-dram")["step_time_ns"].get<double>() * 1e-6);
  EXPECT_GE(row(b, "all-slow")["step_time_ratio"].get<double>(), row(a, "all-slow")["step_time_ratio"].get<double>());
  EXPECT_EQ(run({"synthetic:3", "--compute-scale", "0"}, &out1, &err), 2);
}

TEST(ReplayCli, UsageErrors) {
  std::string out, err;
  EXPECT_EQ(run({"--help"}, &out, &err), 0);
  EXPECT_NE(out.find("Usage: sentinel replay"), std::string::npos);
  EXPECT_NE(out.find("--compute-scale"), std::string::npos);
  EXPECT_EQ(run({}, &out, &err), 2);
  EXPECT_EQ(run({"synthetic", "--budget"}, &out, &err), 2);
  EXPECT_EQ(run({"synthetic", "--budget", "lots"}, &out, &err), 2);
  EXPECT_EQ(run({"synthetic", "--frobnicate"}, &out, &err), 2);
  EXPECT_EQ(run({"a", "b"}, &out, &err), 2);
  EXPECT_EQ(run({"/nonexistent/profile.json"}, &out, &err), 1);
  EXPECT_FALSE(err.empty());
  EXPECT_EQ(run({"synthetic", "--tier", "/nonexistent/tier"}, &out, &err), 1);
  EXPECT_EQ(run({"synthetic:0"}, &out, &err), 1);
}

}  // namespace
}  // namespace sentinel
