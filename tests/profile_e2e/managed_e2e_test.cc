// End-to-end tests of managed mode on the host: known_pattern.cc runs under libsentinel.so with
// SENTINEL_MODE=managed on a faked two-node topology (SENTINEL_SYSFS_ROOT). This machine has one node, so
// binds and moves to "node 1" fail (and are counted); everything else of managed mode runs for real: the
// profile, the in-process plan, births by plan, the executor, deviations, SENTINEL_PROFILE_IN and
// SENTINEL_PLAN, the timeline and its replay. Real page movement is tested in the two-node guest
// (tests/guest/managed_torch.py).
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/temp_dir.h"
#include "pattern_score.h"
#include "plan/timeline.h"

namespace sentinel::e2e {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every file of the test process (stats, timelines, profiles, the fake sysfs) lives in one directory, removed
// with everything in it when the process ends.
std::string scratch(const std::string& name) {
  static const ::sentinel::testing::TempDir dir("sentinel-managed-e2e");
  return dir.file(name);
}

// Node 0 with the CPUs, node 1 memory only (like a CXL expander).
std::string fake_two_node_sysfs() {
  static const std::string root = [] {
    const std::string r = scratch("sysfs");
    const std::string n = r + "/devices/system/node";
    fs::create_directories(n + "/node0");
    fs::create_directories(n + "/node1");
    std::ofstream(n + "/online") << "0-1\n";
    for (int id : {0, 1}) {
      std::ofstream(n + "/node" + std::to_string(id) + "/meminfo")
          << "Node " << id << " MemTotal:       8000000 kB\nNode " << id << " MemFree:        7000000 kB\n";
      std::ofstream(n + "/node" + std::to_string(id) + "/cpulist") << (id == 0 ? "0-1\n" : "\n");
      std::ofstream(n + "/node" + std::to_string(id) + "/distance") << (id == 0 ? "10 30\n" : "30 10\n");
    }
    return r;
  }();
  return root;
}

struct ManagedRun {
  RunResult run;
  nlohmann::json stats;
  std::string timeline;
};

const std::vector<std::string> kArgs = {KNOWN_PATTERN, "--mark", "--steps", "14", "--settle-us", "200"};

ManagedRun run_managed(const std::string& name, std::vector<std::string> extra_env,
                       const std::vector<std::string>& argv = kArgs) {
  ManagedRun m;
  const std::string stats = scratch(name + ".stats"), timeline = scratch(name + ".timeline");
  std::vector<std::string> env = {std::string("LD_PRELOAD=") + SENTINEL_LIB, "SENTINEL_MODE=managed",
                                  "SENTINEL_SYSFS_ROOT=" + fake_two_node_sysfs(), "SENTINEL_FAST_BUDGET=50%",
                                  "SENTINEL_STATS=" + stats, "SENTINEL_TIMELINE=" + timeline,
                                  "SENTINEL_SAMPLER=software", "SENTINEL_LOG=info"};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  m.run = run_program(argv, env);
  m.stats = nlohmann::json::parse(read_file(stats), nullptr, false);
  m.timeline = timeline;
  unlink(stats.c_str());
  return m;
}

bool exited_ok(const RunResult& r) { return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

const RunResult& plain_run() {
  static const RunResult r = run_program(kArgs, {});
  return r;
}

// Profile mode's profile of the same program, for SENTINEL_PROFILE_IN.
std::string recorded_profile(const std::string& name, const std::vector<std::string>& argv = kArgs) {
  const std::string path = scratch(name + ".profile.json");
  const RunResult r = run_program(argv, {std::string("LD_PRELOAD=") + SENTINEL_LIB, "SENTINEL_MODE=profile",
                                         "SENTINEL_PROFILE_OUT=" + path, "SENTINEL_SAMPLER=software"});
  EXPECT_TRUE(exited_ok(r)) << r.err;
  return path;
}

TEST(ManagedE2E, EveryStepAfterThePlanIsManagedAndTheOutputIsUnchanged) {
  const ManagedRun m = run_managed("basic", {});
  ASSERT_TRUE(exited_ok(m.run)) << m.run.err;
  EXPECT_EQ(m.run.out, plain_run().out);
  ASSERT_TRUE(m.stats.is_object()) << m.run.err;
  EXPECT_EQ(m.stats["mode"], "managed");
  EXPECT_EQ(m.stats["managed_stage"], "managed");
  EXPECT_EQ(m.stats["plan_source"], "planned");
  const int64_t first = m.stats["first_managed_step"], last = m.stats["last_step_index"];
  ASSERT_GE(first, 0);
  EXPECT_GE(last - first, 4);
  // One plan, or replans after it: the plan in force at exit came into force at the first step or later.
  const int64_t last_plan = m.stats["last_plan_first_step"];
  EXPECT_GE(last_plan, first);
  EXPECT_LE(last_plan, last);
  if (m.stats["replans"] == 0) EXPECT_EQ(last_plan, first);
  // Steps first..last, the last closed at exit (PlanExecutor::finish).
  EXPECT_EQ(m.stats["managed_steps"].get<int64_t>() + m.stats["fallback_steps"].get<int64_t>(), last - first + 1);
  EXPECT_EQ(m.stats["fallback_steps"], 0);
  EXPECT_EQ(m.stats["live_bytes_at_exit"], 0);
  // The planner charged recycled fast pages at what this machine measured (preload/fault_cost.h).
  EXPECT_GT(m.stats["fault_ns_per_byte_planned"].get<double>(), 0.0);
  EXPECT_LT(m.stats["fault_ns_per_byte_planned"].get<double>(), 1000.0);
  EXPECT_TRUE(m.stats["plan_fresh_bytes_per_step"].is_number_unsigned());
  // The executed timeline reads back and replays through the cost model next to the planned policies.
  ExecutedTimeline t;
  std::string error;
  ASSERT_TRUE(read_timeline_file(m.timeline, &t, &error)) << error;
  EXPECT_EQ(t.steps.size(), 3u);
  const std::string profile = recorded_profile("basic");
  const RunResult replay = run_program({SENTINEL_CLI, "replay", profile, "--timeline", m.timeline}, {});
  EXPECT_TRUE(exited_ok(replay)) << replay.err;
  EXPECT_NE(replay.out.find("executed step " + std::to_string(t.steps[0].step)), std::string::npos) << replay.out;
}

// Half the steps carry one extra allocation (as the steps of a program with variable sequence lengths do):
// every profile describes one kind of step and later steps keep leaving its plan. Managed mode must not
// spend the run profiling again and again (src/manage/reprofile_policy.h): at most 6 plans that did not
// hold before it stops; before the policy, this run profiled again after every third fallback step.
// Under a budget, freed fast extents are parked (pages kept, bytes still in the budget) and reused by the
// next step's objects of their class, instead of being returned to the kernel on every free and faulted
// in again. Track mode (first-touch under the budget): the same allocations every run, so the counts are
// exact. Checked: reuses happen, few extents are trimmed, the budget bound holds with parked bytes
// counted, and the program's output (checksums of every object it reads) is unchanged.
TEST(ManagedE2E, FreedFastExtentsAreParkedAndReusedWithinTheBudget) {
  const std::string stats_path = scratch("parked.stats");
  const RunResult run = run_program(kArgs, {std::string("LD_PRELOAD=") + SENTINEL_LIB, "SENTINEL_MODE=track",
                                            "SENTINEL_SYSFS_ROOT=" + fake_two_node_sysfs(),
                                            "SENTINEL_FAST_BUDGET=50%", "SENTINEL_STATS=" + stats_path});
  const nlohmann::json stats = nlohmann::json::parse(read_file(stats_path), nullptr, false);
  unlink(stats_path.c_str());
  ASSERT_TRUE(exited_ok(run)) << run.err;
  EXPECT_EQ(run.out, plain_run().out);
  ASSERT_TRUE(stats.is_object()) << run.err;
  const int64_t freed = stats["objects_freed"], reuses = stats["parked_fast_reuses"];
  const int64_t trimmed = stats["extents_trimmed"];
  std::printf("freed %lld, parked reuses %lld, extents trimmed %lld\n", static_cast<long long>(freed),
              static_cast<long long>(reuses), static_cast<long long>(trimmed));
  EXPECT_GT(reuses, freed / 4) << stats.dump(1);
  EXPECT_LT(trimmed, freed / 3) << stats.dump(1);  // 71 of 116 when every fast free dropped its pages
  EXPECT_LE(stats["peak_fast_bytes"].get<uint64_t>(), stats["fast_budget_bytes"].get<uint64_t>());
  EXPECT_LE(stats["fast_parked_bytes"].get<uint64_t>(), stats["fast_budget_bytes"].get<uint64_t>());
}

TEST(ManagedE2E, StepsThatNeverRepeatExactlyAreNotProfiledAgainAndAgain) {
  std::vector<std::string> argv = {KNOWN_PATTERN, "--mark", "--steps", "300", "--settle-us", "100",
                                   "--work-kb", "1024", "--irregular", "50"};
  const RunResult plain = run_program(argv, {});
  ASSERT_TRUE(exited_ok(plain)) << plain.err;
  const ManagedRun m = run_managed("irregular", {"SENTINEL_WARMUP_STEPS=0", "SENTINEL_PROFILE_STEPS=1"}, argv);
  ASSERT_TRUE(exited_ok(m.run)) << m.run.err;
  EXPECT_EQ(m.run.out, plain.out);
  ASSERT_TRUE(m.stats.is_object()) << m.run.err;
  EXPECT_GT(m.stats["fallback_steps"].get<int64_t>(), 0);
  EXPECT_LE(m.stats["reprofiles"].get<int64_t>(), 6) << m.run.err;
  // The wait was used: either a run of fallbacks was held back or re-profiling stopped.
  EXPECT_TRUE(m.stats["reprofiles_deferred"].get<int64_t>() > 0 || m.stats["reprofiling_stopped"].get<bool>())
      << m.run.err;
}

TEST(ManagedE2E, ARecordedProfileThatMatchesReplacesProfiling) {
  const std::string profile = recorded_profile("match");
  const ManagedRun m = run_managed("profile_in", {"SENTINEL_PROFILE_IN=" + profile});
  ASSERT_TRUE(exited_ok(m.run)) << m.run.err;
  EXPECT_EQ(m.run.out, plain_run().out);
  EXPECT_NE(m.run.err.find("SENTINEL_PROFILE_IN matches"), std::string::npos) << m.run.err;
  EXPECT_EQ(m.stats["profiled_steps"], 0);
  EXPECT_EQ(m.stats["managed_stage"], "managed");
  EXPECT_GE(m.stats["managed_steps"].get<int64_t>(), 8);
}

TEST(ManagedE2E, AProfileOfAnotherProgramIsRefusedAndProfilingRuns) {
  std::vector<std::string> other = kArgs;
  other.insert(other.end(), {"--copies", "2"});  // twice the objects per step: another period
  const std::string profile = recorded_profile("other", other);
  const ManagedRun m = run_managed("mismatch", {"SENTINEL_PROFILE_IN=" + profile});
  ASSERT_TRUE(exited_ok(m.run)) << m.run.err;
  EXPECT_EQ(m.run.out, plain_run().out);
  EXPECT_NE(m.run.err.find("SENTINEL_PROFILE_IN does not match this program"), std::string::npos) << m.run.err;
  EXPECT_GE(m.stats["profiled_steps"].get<int64_t>(), 1);
  EXPECT_EQ(m.stats["managed_stage"], "managed");
}

TEST(ManagedE2E, AMalformedProfileIsRejectedWithTheReason) {
  const std::string bad = scratch("bad.json");
  std::ofstream(bad) << "{\"format\": \"sentinel-profile\", \"version\": 1, \"period\": \"twelve\"}";
  const ManagedRun m = run_managed("malformed", {"SENTINEL_PROFILE_IN=" + bad});
  ASSERT_TRUE(exited_ok(m.run)) << m.run.err;
  EXPECT_NE(m.run.err.find("SENTINEL_PROFILE_IN rejected:"), std::string::npos) << m.run.err;
  EXPECT_NE(m.run.err.find("period"), std::string::npos) << m.run.err;
  EXPECT_EQ(m.stats["managed_stage"], "managed");
}

TEST(ManagedE2E, AWrittenPlanIsExecutedAndOneThatDoesNotFitIsReplaced) {
  const std::string profile = recorded_profile("plan");
  const std::string plan = scratch("plan.json"), foreign = scratch("foreign-plan.json");
  ASSERT_TRUE(exited_ok(run_program({SENTINEL_CLI, "replay", profile, "--budget", "50%", "--write-plan", plan}, {})));
  ASSERT_TRUE(exited_ok(run_program({SENTINEL_CLI, "replay", "synthetic:4", "--write-plan", foreign}, {})));
  const ManagedRun given = run_managed("plan_in", {"SENTINEL_PROFILE_IN=" + profile, "SENTINEL_PLAN=" + plan});
  ASSERT_TRUE(exited_ok(given.run)) << given.run.err;
  EXPECT_EQ(given.run.out, plain_run().out);
  EXPECT_EQ(given.stats["plan_source"], "SENTINEL_PLAN") << given.run.err;
  const ManagedRun other = run_managed("plan_foreign", {"SENTINEL_PLAN=" + foreign});
  ASSERT_TRUE(exited_ok(other.run)) << other.run.err;
  EXPECT_NE(other.run.err.find("SENTINEL_PLAN does not fit this program"), std::string::npos) << other.run.err;
  EXPECT_EQ(other.stats["plan_source"], "planned");
}

TEST(ManagedE2E, AnInvalidTierModelIsOneMessageAndPassThrough) {
  const ManagedRun m = run_managed("tier", {"SENTINEL_TIER=nvram"});
  ASSERT_TRUE(exited_ok(m.run)) << m.run.err;
  EXPECT_EQ(m.run.out, plain_run().out);
  EXPECT_NE(m.run.err.find("invalid SENTINEL_TIER='nvram'"), std::string::npos) << m.run.err;
  EXPECT_NE(m.run.err.find("pass-through"), std::string::npos) << m.run.err;
}

}  // namespace
}  // namespace sentinel::e2e
