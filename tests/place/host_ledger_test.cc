#include "place/host_ledger.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/process_identity.h"

namespace sentinel::place {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

class Ledger : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sentinel-ledger-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(HostLedger::path_for(dir_.c_str(), "job", "host", path_, sizeof path_));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  bool join(HostLedger& l, uint64_t budget) {
    const char* why = nullptr;
    const bool ok = l.join(path_, budget, getpid(), process_start_time(getpid()), &why);
    if (!ok) ADD_FAILURE() << why;
    return ok;
  }
  std::string dir_;
  char path_[HostLedger::kPathMax];
};

// A shared page the forked ranks report through.
// Rank r's share of Shared::committed_mib for `bytes` (whole MiB), and the bytes all ranks hold.
uint64_t field(int r, uint64_t bytes) { return (bytes / (1024 * 1024)) << (16 * r); }
uint64_t total_bytes(uint64_t word, int ranks) {
  uint64_t mib = 0;
  for (int r = 0; r < ranks; ++r) mib += (word >> (16 * r)) & 0xffff;
  return mib * 1024 * 1024;
}

struct Shared {
  // What each child holds after a successful reserve, in MiB, 16 bits per rank in one word: the parent
  // reads all ranks at one instant (separate counters read one after the other add up a rank's bytes
  // from before a release to another's from after the reservation that release allowed: under
  // ThreadSanitizer's slowdown that "overshoot" was seen).
  std::atomic<uint64_t> committed_mib;
  std::atomic<uint64_t> ready;
  std::atomic<uint64_t> stop;
  std::atomic<uint64_t> successes;
  std::atomic<uint64_t> overshoots;  // a rank saw the committed bytes above the budget
};
Shared* map_shared() {
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return static_cast<Shared*>(p);
}

TEST(LedgerPath, OnePerJobAndHost) {
  char a[256], b[256], c[256], d[256];
  ASSERT_TRUE(HostLedger::path_for("/dev/shm", "10.0.0.1:29500", "node1", a, sizeof a));
  ASSERT_TRUE(HostLedger::path_for("/dev/shm", "10.0.0.1:29500", "node1", b, sizeof b));
  ASSERT_TRUE(HostLedger::path_for("/dev/shm", "10.0.0.1:29501", "node1", c, sizeof c));
  ASSERT_TRUE(HostLedger::path_for("/dev/shm", "10.0.0.1:29500", "node2", d, sizeof d));
  EXPECT_STREQ(a, b);
  EXPECT_STRNE(a, c);
  EXPECT_STRNE(a, d);
  EXPECT_EQ(std::string(a).rfind("/dev/shm/sentinel-ledger-", 0), 0u);
  char tiny[8];
  EXPECT_FALSE(HostLedger::path_for("/dev/shm", "j", "h", tiny, sizeof tiny));
}

TEST_F(Ledger, OneRankGetsTheWholeBudgetAndNoMore) {
  HostLedger l;
  ASSERT_TRUE(join(l, 10 * kMiB));
  EXPECT_EQ(l.budget(), 10 * kMiB);
  EXPECT_TRUE(l.try_reserve(6 * kMiB));
  EXPECT_TRUE(l.try_reserve(4 * kMiB));
  EXPECT_FALSE(l.try_reserve(1));
  EXPECT_EQ(l.held(), 10 * kMiB);
  l.release(4 * kMiB);
  EXPECT_TRUE(l.try_reserve(3 * kMiB));
  EXPECT_EQ(l.host_held(), 9 * kMiB);
  l.release(100 * kMiB);  // clamped: never below zero
  EXPECT_EQ(l.held(), 0u);
  l.leave();
  EXPECT_FALSE(l.try_reserve(1));
}

TEST_F(Ledger, RanksShareOneBudget) {
  HostLedger a, b;
  ASSERT_TRUE(join(a, 10 * kMiB));
  ASSERT_TRUE(join(b, 10 * kMiB));  // the same process twice: two slots, both live
  EXPECT_NE(a.slot_index(), b.slot_index());
  EXPECT_EQ(a.live_slots(), 2u);
  EXPECT_TRUE(a.try_reserve(7 * kMiB));
  EXPECT_FALSE(b.try_reserve(4 * kMiB));
  EXPECT_TRUE(b.try_reserve(3 * kMiB));
  a.release(7 * kMiB);
  EXPECT_TRUE(b.try_reserve(7 * kMiB));
  EXPECT_EQ(a.host_held(), 10 * kMiB);
  a.leave();
  b.leave();
}

TEST_F(Ledger, ALaterJobAloneInAStaleLedgerSetsItsBudget) {
  {
    HostLedger first;
    ASSERT_TRUE(join(first, 10 * kMiB));
    first.leave();
  }
  HostLedger second;
  ASSERT_TRUE(join(second, 20 * kMiB));
  EXPECT_EQ(second.budget(), 20 * kMiB);
  // A rank joining a live ledger takes the ledger's budget.
  HostLedger third;
  ASSERT_TRUE(join(third, 5 * kMiB));
  EXPECT_EQ(third.budget(), 20 * kMiB);
}

TEST_F(Ledger, NotALedgerIsRefused) {
  FILE* f = fopen(path_, "w");
  ASSERT_NE(f, nullptr);
  fputs("something else", f);
  fclose(f);
  HostLedger l;
  const char* why = nullptr;
  EXPECT_FALSE(l.join(path_, kMiB, getpid(), 1, &why));
  EXPECT_NE(why, nullptr);
}

// Hazard: a rank killed with SIGKILL while holding bytes. The survivor recovers its slot: the bytes come
// back, and a new job's rank can use the ledger.
TEST_F(Ledger, KilledRanksShareComesBack) {
  Shared* shared = map_shared();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HostLedger l;
    const char* why = nullptr;
    if (!l.join(path_, 10 * kMiB, getpid(), process_start_time(getpid()), &why) || !l.try_reserve(8 * kMiB)) _exit(1);
    shared->ready.store(1);
    for (;;) pause();
  }
  while (shared->ready.load() == 0) usleep(1000);
  HostLedger survivor;
  ASSERT_TRUE(join(survivor, 10 * kMiB));
  EXPECT_FALSE(survivor.try_reserve(4 * kMiB));
  EXPECT_EQ(survivor.recover_dead(), 0u);  // the child lives: nothing to recover
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_EQ(survivor.recover_dead(), 8 * kMiB);
  EXPECT_EQ(survivor.live_slots(), 1u);
  EXPECT_TRUE(survivor.try_reserve(10 * kMiB));
  survivor.release(10 * kMiB);
  survivor.leave();
  // A new job finds the ledger clean.
  HostLedger next;
  ASSERT_TRUE(join(next, 10 * kMiB));
  EXPECT_TRUE(next.try_reserve(10 * kMiB));
  munmap(shared, sizeof(Shared));
}

// Four forked ranks, two threads each, reserve and release at random; one is killed mid-run. The
// bytes the ranks hold after successful reservations, sampled by the parent, never exceed the budget,
// and after recovery the ledger holds exactly what the survivors hold.
TEST_F(Ledger, ConcurrentRanksNeverOvershootAndAKilledOneLeaksNothing) {
  constexpr int kRanks = 4;
  constexpr uint64_t kBudget = 64 * kMiB;
  Shared* shared = map_shared();
  std::vector<pid_t> children;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      HostLedger l;
      const char* why = nullptr;
      if (!l.join(path_, kBudget, getpid(), process_start_time(getpid()), &why)) _exit(1);
      shared->ready.fetch_add(1);
      std::mt19937_64 rng(r);
      std::vector<uint64_t> held;
      for (uint64_t round = 1; shared->stop.load() == 0; ++round) {
        if (round % 4096 == 0) l.recover_dead();  // what the runtime's service thread does
        if (held.empty() || rng() % 2 == 0) {
          const uint64_t bytes = (1 + rng() % 8) * kMiB;
          if (l.try_reserve(bytes)) {
            const uint64_t after = shared->committed_mib.fetch_add(field(r, bytes)) + field(r, bytes);
            // Checked here too, right after the reservation: the parent's samples are far apart.
            if (total_bytes(after, kRanks) > kBudget) shared->overshoots.fetch_add(1);
            shared->successes.fetch_add(1);
            held.push_back(bytes);
          }
        } else {
          shared->committed_mib.fetch_sub(field(r, held.back()));  // before the release: never less than held
          l.release(held.back());
          held.pop_back();
        }
      }
      // Survivors give everything back, then wait to be told to leave.
      for (uint64_t b : held) {
        shared->committed_mib.fetch_sub(field(r, b));
        l.release(b);
      }
      shared->ready.fetch_add(100);
      while (shared->stop.load() != 2) usleep(1000);
      l.leave();
      _exit(0);
    }
    children.push_back(pid);
  }
  while (shared->ready.load() < kRanks) usleep(1000);
  uint64_t samples = 0, worst = 0;
  bool killed = false;
  while (!killed || shared->successes.load() < 200000) {
    const uint64_t sum = total_bytes(shared->committed_mib.load(), kRanks);
    worst = std::max(worst, sum);
    ++samples;
    if (!killed && shared->successes.load() >= 50000) {
      ASSERT_EQ(kill(children[0], SIGKILL), 0);  // mid-run, at an arbitrary instruction
      ASSERT_EQ(waitpid(children[0], nullptr, 0), children[0]);
      const uint64_t word = shared->committed_mib.load();
      shared->committed_mib.fetch_sub(word & 0xffff);  // what the dead rank 0 held is gone with it
      killed = true;
    }
  }
  EXPECT_LE(worst, kBudget) << "over " << samples << " samples";
  EXPECT_EQ(shared->overshoots.load(), 0u);
  shared->stop.store(1);
  while (shared->ready.load() < kRanks + 100 * (kRanks - 1)) usleep(1000);
  HostLedger observer;
  ASSERT_TRUE(join(observer, kBudget));
  observer.recover_dead();
  EXPECT_EQ(observer.host_held(), 0u);  // survivors gave all back; the dead rank's share was recovered
  EXPECT_LE(observer.peak_host_held(), kBudget);
  EXPECT_TRUE(observer.try_reserve(kBudget));
  observer.release(kBudget);
  shared->stop.store(2);
  for (size_t i = 1; i < children.size(); ++i) {
    int status = 0;
    ASSERT_EQ(waitpid(children[i], &status, 0), children[i]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  munmap(shared, sizeof(Shared));
}

// A forked child (a DataLoader worker) detaches: it cannot reserve, and what it gives back is not taken
// from the parent's share.
TEST_F(Ledger, ForkedChildDoesNotTouchTheParentsShare) {
  HostLedger l;
  ASSERT_TRUE(join(l, 10 * kMiB));
  ASSERT_TRUE(l.try_reserve(4 * kMiB));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    l.detach_after_fork();
    const bool reserved = l.try_reserve(kMiB);
    l.release(4 * kMiB);
    _exit(reserved ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(l.held(), 4 * kMiB);
  EXPECT_EQ(l.host_held(), 4 * kMiB);
}

}  // namespace
}  // namespace sentinel::place
