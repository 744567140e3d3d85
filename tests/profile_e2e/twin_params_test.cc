// Persistent objects that share a tag (manage/twin_tags.h): twin_params.c allocates eight parameters of
// one tag in its set-up steps and reads them all in every training step. The profile must record eight
// objects with their own sizes, and managed mode must place each by its own tag. Before, the profile held
// one object of one parameter's size with the accesses of all eight, the plan's decision for that tag moved
// all eight, and the fast pool was fuller than the plan knew: prefetches and planned-fast births were
// refused on every managed step (googlenet at 20%: plan fidelity 0.16-0.73, 560 planned-fast births a step
// sent slow, about 1,500 refused prefetches a step).
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pattern_score.h"

namespace sentinel::e2e {
namespace {

constexpr int kTwins = 8;
constexpr uint64_t kParamBytes = 1u << 20;

std::vector<std::string> program(int steps) {
  return {TWIN_PARAMS, "--steps", std::to_string(steps), "--twins", std::to_string(kTwins), "--kib",
          std::to_string(kParamBytes >> 10)};
}

TEST(TwinParams, EachPersistentObjectOfASharedTagIsAProfileObjectOfItsOwn) {
  const RunResult plain = run_program(program(12), {});
  ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0) << plain.err;
  RunResult r;
  StepProfile p;
  std::string error;
  ASSERT_TRUE(profile_with_software_sampler(SENTINEL_LIB, program(12), &r, &p, &error)) << error;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(p.period, 4u);  // the input and three activations
  std::set<uint64_t> sizes, tags;
  for (const ObjectProfile& o : p.objects) {
    if (!o.persistent) continue;
    sizes.insert(o.size);
    tags.insert(o.tag);
    // Each is read in every phase of the step: its own reads, not eight objects' worth.
    uint64_t reads = 0;
    for (const PhaseAccess& a : o.accesses) reads += a.reads;
    EXPECT_GT(reads, 0u) << "parameter of " << o.size << " bytes";
  }
  EXPECT_EQ(tags.size(), static_cast<size_t>(kTwins));
  for (int k = 0; k < kTwins; ++k) EXPECT_EQ(sizes.count(kParamBytes + k * 4096ull), 1u) << "parameter " << k;
}

// Managed mode as a dry run on this one node: the budget and the moves are booked as on a tiered machine.
// A quarter of the step's peak holds two or three parameters, not all eight. `extra`: more variables.
nlohmann::json managed_run(const std::vector<std::string>& extra) {
  const std::string stats = ::testing::TempDir() + "/twin_params_" + std::to_string(getpid()) + ".json";
  const RunResult plain = run_program(program(30), {});
  std::vector<std::string> env = {"LD_PRELOAD=" SENTINEL_LIB, "SENTINEL_MODE=managed", "SENTINEL_DRY_RUN=1",
                                  "SENTINEL_FAST_BUDGET=25%", "SENTINEL_TIER=optane", "SENTINEL_STATS=" + stats,
                                  "SENTINEL_LOG=warn"};
  env.insert(env.end(), extra.begin(), extra.end());
  const RunResult r = run_program(program(30), env);
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  std::ifstream f(stats);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  unlink(stats.c_str());
  return j;
}

void expect_placed_within_budget(const nlohmann::json& j) {
  ASSERT_TRUE(j.is_object()) << "no stats file";
  ASSERT_GT(j["managed_steps"].get<uint64_t>(), 10u) << j.dump();
  EXPECT_EQ(j["fallback_steps"].get<uint64_t>(), 0u) << j.dump();
  // Before: 23 planned-fast births sent slow, 552 prefetches refused, fidelity 0.27.
  EXPECT_EQ(j["planned_fast_forced_slow"].get<uint64_t>(), 0u) << j.dump();
  // A catch-up prefetch at the plan's start may find its room taken by the step's first births when the
  // engine thread runs late (a loaded machine: 1 refusal in 2 of 60 runs beside two busy loops); it is asked
  // again at the next step's start. Hundreds before the fix.
  EXPECT_LE(j["migrations_refused_budget"].get<uint64_t>(), 2u) << j.dump();
  EXPECT_GE(j["plan_fidelity"].get<double>(), 0.99) << j.dump();
}

TEST(TwinParams, ManagedModePlacesEachByItsOwnTagWithinTheBudget) {
  expect_placed_within_budget(managed_run({}));
}

// A recorded profile names the twins as the run that recorded it did: the same objects in the same order.
TEST(TwinParams, ARecordedProfileNamesTheTwinsAsItsRunDid) {
  const std::string profile = ::testing::TempDir() + "/twin_params_" + std::to_string(getpid()) + ".profile.json";
  const RunResult rec = run_program(program(12), {"LD_PRELOAD=" SENTINEL_LIB, "SENTINEL_MODE=profile",
                                                  "SENTINEL_PROFILE_OUT=" + profile, "SENTINEL_LOG=warn"});
  ASSERT_TRUE(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 0) << rec.err;
  const nlohmann::json j = managed_run({"SENTINEL_PROFILE_IN=" + profile});
  unlink(profile.c_str());
  ASSERT_TRUE(j.is_object()) << "no stats file";
  EXPECT_EQ(j["profile_source"], "SENTINEL_PROFILE_IN") << j.dump();
  expect_placed_within_budget(j);
}

}  // namespace
}  // namespace sentinel::e2e
