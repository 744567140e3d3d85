// `sentinel profile-diff` as the command parses it (tools/sentinel/profile_diff_command.cc), and a
// version-2 profile of the emulated PMU (write-backs, source, lost samples) read by `sentinel replay`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_sentinel.h"

#include "profile/profile_io.h"

namespace sentinel {
namespace {

// The emulated PMU's ground truth of a small program: two buffers, 2:1 passes, one untouched.
StepProfile truth_profile() {
  StepProfile p;
  p.period = 2;
  p.phases.resize(2, PhaseProfile{1000000});
  p.step_time_ns = 2000000;
  p.profiled_steps = 2;
  p.sampler = "pebs";
  p.sampler_source = "qemu-slowtier";
  p.sample_period = 1;
  p.writebacks_counted = true;
  for (uint64_t i = 0; i < 3; ++i) {
    ObjectProfile o;
    o.tag = 0x100 + i;
    o.size = 1 << 20;
    o.persistent = true;
    o.death_phase = 1;
    p.objects.push_back(o);
  }
  p.objects[0].accesses = {{0, 16384, 16384, 16384}, {1, 16384, 16384, 16384}};
  p.objects[1].accesses = {{1, 16384, 16384, 16384}};
  return p;
}

std::string write(const StepProfile& p, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/profile_diff_cli_" + name + ".json";
  std::string err;
  EXPECT_TRUE(write_profile_file(path, p, &err)) << err;
  return path;
}

TEST(ProfileDiffCli, ScoresAProfileAgainstTheTruth) {
  const std::string truth = write(truth_profile(), "truth");
  StepProfile sw = truth_profile();
  sw.sampler = "software";
  sw.sampler_source.clear();
  sw.writebacks_counted = false;
  sw.objects[0].accesses = {{0, 16384, 0}, {1, 16384, 0}};
  sw.objects[1].accesses.clear();  // the sampler missed it
  for (auto& o : sw.objects)
    for (auto& a : o.accesses) a.writebacks = 0;
  const std::string other = write(sw, "software");
  std::string out, err;
  ASSERT_EQ(test::run_sentinel({"profile-diff", truth, other}, &out, &err), 0) << err;
  EXPECT_EQ(err, "");
  EXPECT_NE(out.find("traffic error"), std::string::npos) << out;
  EXPECT_NE(out.find("hot objects reported untouched: 1"), std::string::npos) << out;
  EXPECT_NE(out.find("pebs from qemu-slowtier, sample period 1"), std::string::npos) << out;
  ASSERT_EQ(test::run_sentinel({"profile-diff", "--json", truth, other}, &out, &err), 0) << err;
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  // Truth 6 x 16384 lines on object 0 and 3 x 16384 on object 1; the other 2 x 16384 on object 0:
  // |2 - 6| + 3 = 7 of 9.
  EXPECT_NEAR(j["traffic_error"].get<double>(), 7.0 / 9.0, 1e-9);
  EXPECT_EQ(j["untouched_hot"].size(), 1u);
  EXPECT_EQ(j["untouched_hot"][0]["tag"], "0x0000000000000101");
}

TEST(ProfileDiffCli, RefusesATruthThatLostSamplesAndWarnsAboutAnEstimate) {
  StepProfile lossy = truth_profile();
  lossy.samples_lost = 7;
  const std::string lost = write(lossy, "lost");
  const std::string truth = write(truth_profile(), "truth2");
  std::string out, err;
  EXPECT_EQ(test::run_sentinel({"profile-diff", lost, truth}, &out, &err), 1);
  EXPECT_NE(err.find("lost 7 samples"), std::string::npos) << err;
  EXPECT_NE(err.find("not a ground truth"), std::string::npos) << err;
  EXPECT_EQ(test::run_sentinel({"profile-diff", "--allow-lost", lost, truth}, &out, &err), 0) << err;
  StepProfile estimate = truth_profile();
  estimate.sample_period = 10007;
  const std::string est = write(estimate, "estimate");
  EXPECT_EQ(test::run_sentinel({"profile-diff", est, truth}, &out, &err), 0) << err;
  EXPECT_NE(err.find("warning"), std::string::npos) << err;
  EXPECT_EQ(test::run_sentinel({"profile-diff", "/nonexistent.json", truth}, &out, &err), 1);
  EXPECT_NE(err.find("/nonexistent.json"), std::string::npos) << err;
  EXPECT_EQ(test::run_sentinel({"profile-diff", truth}, &out, &err), 2);  // OTHER missing
}

TEST(ProfileDiffCli, ReplayReadsAnEmulatedPmuProfile) {
  const std::string truth = write(truth_profile(), "replay");
  std::string out, err;
  ASSERT_EQ(test::run_sentinel({"replay", truth, "--tier", "optane", "--json"}, &out, &err), 0) << err;
  const auto rows = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << out;
  EXPECT_EQ(rows.size(), 7u);
}

}  // namespace
}  // namespace sentinel
