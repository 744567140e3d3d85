#include "core/output_path.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/temp_dir.h"

namespace sentinel {
namespace {

ProcessIdentity identity(int64_t pid, int64_t rank, int64_t world, const char* host = "node7") {
  ProcessIdentity id;
  id.pid = pid;
  id.rank = rank;
  id.world_size = world;
  std::snprintf(id.host, sizeof id.host, "%s", host);
  return id;
}

std::string expand(const char* pattern, const ProcessIdentity& id) {
  char out[512];
  const char* why = nullptr;
  if (!expand_output_path(pattern, id, out, sizeof out, &why)) return std::string("error: ") + why;
  return out;
}

TEST(OutputPath, ExpandsPidRankHostAndPercent) {
  const ProcessIdentity id = identity(4242, 3, 4);
  EXPECT_EQ(expand("stats-%r-%p.json", id), "stats-3-4242.json");
  EXPECT_EQ(expand("/out/%h/100%%-%r", id), "/out/node7/100%-3");
  EXPECT_EQ(expand("plain.json", id), "plain.json");
}

TEST(OutputPath, RankIsZeroOutsideAJob) { EXPECT_EQ(expand("s.%r", identity(9, -1, 0)), "s.0"); }

TEST(OutputPath, RejectsUnknownConversionsAndOverlongResults) {
  const ProcessIdentity id = identity(1, 0, 1);
  EXPECT_EQ(expand("a%q", id).rfind("error", 0), 0u);
  EXPECT_EQ(expand("trailing%", id).rfind("error", 0), 0u);
  std::string long_pattern(300, 'x');
  long_pattern += "%h%h%h%h%h";
  const ProcessIdentity wide = identity(1, 0, 1, std::string(60, 'h').c_str());
  EXPECT_EQ(expand(long_pattern.c_str(), wide).rfind("error", 0), 0u);
}

TEST(OutputPath, PatternHasSeesThroughPercentPercent) {
  EXPECT_TRUE(pattern_has("a%p", 'p'));
  EXPECT_FALSE(pattern_has("a%%p", 'p'));
  EXPECT_TRUE(pattern_has("%%%r", 'r'));
}

class Claims : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(tmp_.ok()); }
  size_t claim_files() const {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) n += e.is_regular_file();
    return n;
  }
  std::string resolve(const char* pattern, const ProcessIdentity& id, OutputClaims* claims, std::string* note) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s", pattern);
    char notes[1024] = {};
    const char* why = nullptr;
    if (!resolve_output_path("SENTINEL_STATS", buf, sizeof buf, id, 77, claims, notes, sizeof notes, &why))
      return std::string("error: ") + why;
    *note = notes;
    return buf;
  }
  testing::TempDir tmp_{"sentinel-claims"};
  const std::string& dir_ = tmp_.path();
};

TEST_F(Claims, RanksOfAJobGetTheirRankAppendedAndSaySo) {
  OutputClaims claims(dir_.c_str());
  std::string note;
  EXPECT_EQ(resolve("/x/stats.json", identity(getpid(), 1, 2), &claims, &note), "/x/stats.json.r1");
  EXPECT_NE(note.find("SENTINEL_STATS"), std::string::npos);
  EXPECT_NE(note.find("/x/stats.json.r1"), std::string::npos);
  EXPECT_EQ(std::count(note.begin(), note.end(), '\n'), 1);
  // With %r in the pattern the user chose the name: nothing is appended.
  EXPECT_EQ(resolve("/x/stats-%r.json", identity(getpid(), 1, 2), &claims, &note), "/x/stats-1.json");
  EXPECT_EQ(note, "");
}

TEST_F(Claims, ASecondLiveProcessOnTheSamePathGetsItsPidAppended) {
  // A child process claims the path and waits; while it lives, the parent's claim fails.
  int to_parent[2], to_child[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_child), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OutputClaims mine(dir_.c_str());
    const char* why = nullptr;
    const char ok = mine.claim("/x/shared.json", getpid(), process_start_time(getpid()), &why) ? 'y' : 'n';
    (void)!write(to_parent[1], &ok, 1);
    char c;
    (void)!read(to_child[0], &c, 1);
    if (c == 'r') mine.release_all(getpid());
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(to_parent[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  OutputClaims claims(dir_.c_str());
  std::string note;
  const ProcessIdentity me = identity(getpid(), -1, 0);
  const std::string expected = "/x/shared.json." + std::to_string(getpid());
  EXPECT_EQ(resolve("/x/shared.json", me, &claims, &note), expected);
  EXPECT_NE(note.find("claimed by another live process"), std::string::npos);
  // The child dies without releasing (as kill -9 would leave it): its claim is taken over.
  ASSERT_EQ(write(to_child[1], "k", 1), 1);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  note.clear();
  EXPECT_EQ(resolve("/x/shared.json", me, &claims, &note), "/x/shared.json");
  EXPECT_EQ(note, "");
  EXPECT_EQ(claim_files(), 1u);  // the taken-over claim (a pid-suffixed path needs none)
  claims.release_all(getpid());
  EXPECT_EQ(claim_files(), 0u);
}

TEST_F(Claims, OwnClaimIsKeptAndReleaseLeavesOthersClaims) {
  OutputClaims claims(dir_.c_str());
  const char* why = nullptr;
  EXPECT_TRUE(claims.claim("rel/a.json", getpid(), 5, &why));
  EXPECT_TRUE(claims.claim("rel/a.json", getpid(), 5, &why));  // again: still ours
  // The same file through its absolute name is the same claim.
  const std::string absolute = std::filesystem::current_path().string() + "/rel/a.json";
  EXPECT_TRUE(claims.claim(absolute.c_str(), getpid(), 5, &why));
  EXPECT_EQ(claim_files(), 1u);
  claims.release_all(getpid() + 1);  // a forked child's exit removes nothing
  EXPECT_EQ(claim_files(), 1u);
  claims.release_all(getpid());
  EXPECT_EQ(claim_files(), 0u);
}

TEST_F(Claims, MissingClaimDirectoryKeepsThePath) {
  OutputClaims claims("/nonexistent-sentinel-dir");
  std::string note;
  EXPECT_EQ(resolve("/x/s.json", identity(getpid(), -1, 0), &claims, &note), "/x/s.json");
}

TEST(ProcessIdentity, ReadsRankThenLocalRankAndWorldSize) {
  struct Env {
    const char* rank;
    const char* local;
    const char* world;
  };
  auto lookup = [](const char* name, void* ctx) -> const char* {
    auto* e = static_cast<Env*>(ctx);
    if (std::string(name) == "RANK") return e->rank;
    if (std::string(name) == "LOCAL_RANK") return e->local;
    if (std::string(name) == "WORLD_SIZE") return e->world;
    return nullptr;
  };
  Env both{"5", "1", "8"};
  ProcessIdentity id = identity_from(lookup, &both, 10, "h");
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 8);
  Env local_only{nullptr, "2", nullptr};
  id = identity_from(lookup, &local_only, 10, "h");
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.world_size, 0);
  Env junk{"x", nullptr, "-1"};
  id = identity_from(lookup, &junk, 10, "h");
  EXPECT_EQ(id.rank, -1);
  EXPECT_EQ(id.world_size, 0);
}

TEST(ProcessIdentity, StartTimeNamesALiveProcessAndNotADeadOne) {
  const uint64_t mine = process_start_time(getpid());
  EXPECT_GT(mine, 0u);
  EXPECT_TRUE(process_alive(getpid(), mine));
  EXPECT_FALSE(process_alive(getpid(), mine + 1));  // the same pid, another process
  const pid_t child = fork();
  if (child == 0) _exit(0);
  const uint64_t start = process_start_time(child);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(process_alive(child, start));
}

}  // namespace
}  // namespace sentinel
