// The `sentinel` command line as CLI11 parses it (tools/sentinel/sentinel_app.cc, run_command.cc,
// profile_command.cc): exit statuses, help, version, and how `run` finds its program.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

#include "core/stats_keys.h"
#include "run_sentinel.h"
#include "status_line.h"

namespace sentinel {
namespace {

int run(const std::vector<std::string>& args, std::string* out, std::string* err) {
  return test::run_sentinel(args, out, err);
}

TEST(SentinelCli, HelpListsEveryCommandAndVersionPrintsIt) {
  std::string out, err;
  EXPECT_EQ(run({"--help"}, &out, &err), 0);
  for (const char* c : {"run", "profile", "profile-diff", "topology", "replay", "report"}) EXPECT_NE(out.find(c), std::string::npos) << c;
  EXPECT_EQ(run({"help"}, &out, &err), 0);
  EXPECT_NE(out.find("report"), std::string::npos);
  EXPECT_EQ(run({"--version"}, &out, &err), 0);
  EXPECT_EQ(out, std::string("sentinel ") + SENTINEL_VERSION + "\n");
}

TEST(SentinelCli, UsageErrorsExitTwo) {
  std::string out, err;
  EXPECT_EQ(run({}, &out, &err), 2);
  EXPECT_EQ(run({"frobnicate"}, &out, &err), 2);
  EXPECT_EQ(run({"run"}, &out, &err), 2);  // no program
  EXPECT_NE(err.find("PROGRAM"), std::string::npos) << err;
  EXPECT_EQ(run({"run", "--bogus", "--", "/bin/true"}, &out, &err), 2);
  EXPECT_EQ(run({"run", "--fast-budget"}, &out, &err), 2);  // the option without its value
  EXPECT_EQ(run({"run", "--quiet", "--lib", "/nonexistent/libsentinel.so", "--", "/bin/true"}, &out, &err), 2);
  EXPECT_NE(err.find("cannot find libsentinel.so"), std::string::npos) << err;
  EXPECT_EQ(run({"report", "/nonexistent/profile.json"}, &out, &err), 2);
}

TEST(SentinelCli, RunHelpNamesEveryOptionAndVariable) {
  std::string out, err;
  ASSERT_EQ(run({"run", "--help"}, &out, &err), 0);
  for (const char* s : {"--fast-budget", "--mode", "--stats", "--lib", "--quiet", "SENTINEL_FAST_BUDGET",
                        "SENTINEL_WARMUP_STEPS", "Every variable the runtime reads"})
    EXPECT_NE(out.find(s), std::string::npos) << s;
  ASSERT_EQ(run({"profile", "--help"}, &out, &err), 0);
  for (const char* s : {"--out", "--warmup", "--steps", "--sample-period", "--sampler", "--fast-budget"})
    EXPECT_NE(out.find(s), std::string::npos) << s;
}

// Everything from the program on is the program's, options included, with or without "--".
TEST(SentinelCli, RunPassesTheProgramItsOwnOptions) {
  std::string out, err;
  EXPECT_EQ(run({"run", "--quiet", "--lib", SENTINEL_LIB, "/bin/sh", "-c", "exit 3", "--quiet"}, &out, &err), 3) << err;
  EXPECT_EQ(run({"run", "--quiet", "--lib", SENTINEL_LIB, "--", "/bin/sh", "-c", "test \"$0\" = --mode", "--mode"},
                &out, &err),
            0)
      << err;
  // The last of an option given twice wins.
  EXPECT_EQ(run({"run", "--quiet", "--lib", SENTINEL_LIB, "--mode", "track", "--mode", "passthrough", "--", "/bin/sh", "-c",
                 "test \"$SENTINEL_MODE\" = passthrough"},
                &out, &err),
            0)
      << err;
}

#ifdef ALLOC_SCRIPT
// A dry run's summary says what it booked and did not take: births into pages the budget had returned or
// another pool held (tests/preload/parked_room_test.cc, ADryRunReturnsParkedPagesForRoomInTheBooksOnly: 512 KiB
// of the first kind, and object 3's 1 MiB slow extent).
TEST(SentinelCli, ADryRunsSummarySaysWhichFaultsItBooked) {
  std::string out, err;
  ASSERT_EQ(run({"run", "--lib", SENTINEL_LIB, "--dry-run", "--mode", "track", "--fast-budget", "4M", "--", ALLOC_SCRIPT,
                 "a0=3M", "a1=512K", "a2=1M", "f2", "f1", "a3=1M", "f0", "b4=512K"},
                &out, &err),
            0)
      << err;
  EXPECT_NE(err.find("DRY RUN   "), std::string::npos) << err;
  EXPECT_NE(err.find("DRY RUN, faults booked    1.5 MiB of births"), std::string::npos) << err;
}
#endif

TEST(StatusLine, SaysModeStageStepsDramAndMigrationsWithinTheWidth) {
  LiveStatus s;
  std::snprintf(s.mode, sizeof s.mode, "managed");
  std::snprintf(s.stage, sizeof s.stage, "planning");
  s.steps = 12;
  s.dram_bytes = 3 << 20;
  s.budget_bytes = 4 << 20;
  s.migrations = 5;
  s.migrated_bytes = 10 << 20;
  s.managed_steps = 2;
  s.late_prefetches = 1;
  EXPECT_EQ(cli::format_status_line(s, 0),
            "sentinel: managed, planning | step 12 | DRAM 3.0 MiB of 4.0 MiB | 5 migrations (10.0 MiB) | 2 managed, 1 late");
  EXPECT_EQ(cli::format_status_line(s, 20).size(), 20u);
  s.budget_bytes = 0;  // no budget: no "of"
  EXPECT_EQ(cli::format_status_line(s, 0).find(" of "), std::string::npos);
}

// The preload writes the stats file and `sentinel run` summarises it through one list of keys.
TEST(SentinelCli, EveryStatsKeyThePreloadWritesIsInTheSharedList) {
  const std::set<std::string_view> known(stats_key::kAll.begin(), stats_key::kAll.end());
  for (const char* mode : {"track", "profile", "managed"}) {
    char path[] = "/tmp/stats-keys-XXXXXX";
    ::close(::mkstemp(path));
    std::string out, err;
    ASSERT_EQ(run({"run", "--quiet", "--lib", SENTINEL_LIB, "--mode", mode, "--stats", path, "--", "/bin/true"}, &out,
                  &err),
              0)
        << err;
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    std::remove(path);
    ASSERT_TRUE(j.is_object()) << mode;
    for (const auto& [k, v] : j.items()) EXPECT_TRUE(known.count(k)) << k << " (" << mode << ") is not in stats_keys.h";
    EXPECT_TRUE(j.contains(stats_key::kStepsDetected));
  }
}

}  // namespace
}  // namespace sentinel
