#include "place/host_ledger.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "core/process_identity.h"

namespace sentinel::place {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

class Ledger : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    ASSERT_TRUE(HostLedger::path_for(dir_.path().c_str(), "job", "host", path_, sizeof path_));
  }
  bool join(HostLedger& l, uint64_t budget) {
    const Status joined = l.join(path_, budget, getpid(), process_start_time(getpid()));
    if (!joined.is_ok()) ADD_FAILURE() << joined.message();
    return joined.is_ok();
  }
  testing::TempDir dir_{"sentinel-ledger-test"};
  char path_[HostLedger::kPathMax];
};

// The Status form of join: a failure says what failed and, where a system call said why, its errno.
TEST_F(Ledger, AJoinThatFailsSaysWhyInItsStatus) {
  HostLedger l;
  const Status in_a_directory = l.join(dir_.path().c_str(), kMiB, getpid(), process_start_time(getpid()));
  EXPECT_FALSE(in_a_directory.is_ok());
  EXPECT_STREQ(in_a_directory.message(), "cannot open the ledger file");
  EXPECT_EQ(in_a_directory.sys_errno(), EISDIR);
  const std::string nowhere = dir_.path() + "/no-such-dir/ledger";
  const Status not_made = l.join(nowhere.c_str(), kMiB, getpid(), process_start_time(getpid()));
  EXPECT_FALSE(not_made.is_ok());
  EXPECT_STREQ(not_made.message(), "cannot create the ledger file (is /dev/shm there?)");
  EXPECT_FALSE(l.joined());
  EXPECT_TRUE(l.join(path_, kMiB, getpid(), process_start_time(getpid())).is_ok());
  EXPECT_TRUE(l.joined());
  l.leave();
}

// A shared page the forked ranks report through.
// Rank r's share of Shared::committed_mib for `bytes` (whole MiB), and the bytes all ranks hold.
constexpr int kFieldBits = 16;
uint64_t field(int r, uint64_t bytes) { return (bytes / (1024 * 1024)) << (kFieldBits * r); }
uint64_t field_of(uint64_t word, int r) { return (word >> (kFieldBits * r)) & 0xffff; }
uint64_t total_bytes(uint64_t word, int ranks) {
  uint64_t mib = 0;
  for (int r = 0; r < ranks; ++r) mib += field_of(word, r);
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
  std::atomic<uint64_t> victim_successes;
  std::atomic<uint64_t> round;
  std::atomic<uint64_t> done;
  std::atomic<uint64_t> reclaimed;
  std::atomic<uint64_t> observed;
};
Shared* map_shared() {
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return static_cast<Shared*>(p);
}

// Waits for a forked child; true when it exited with status 0.
bool exited_cleanly(pid_t child) {
  int status = 0;
  return waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
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
  EXPECT_EQ(std::string(a).rfind("/dev/shm/sentinel-ledger2-", 0), 0u);
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
  const Status joined = l.join(path_, kMiB, getpid(), 1);
  EXPECT_FALSE(joined.is_ok());
  EXPECT_STRNE(joined.message(), "");
}

// Hazard: a rank killed with SIGKILL while holding bytes. The survivor recovers its slot: the bytes come
// back, and a new job's rank can use the ledger.
TEST_F(Ledger, KilledRanksShareComesBack) {
  Shared* shared = map_shared();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HostLedger l;
    if (!l.join(path_, 10 * kMiB, getpid(), process_start_time(getpid())).is_ok() || !l.try_reserve(8 * kMiB)) _exit(1);
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

// What one forked rank does in the concurrent test: reserve and release at random, recording what it
// holds in its field of Shared::committed_mib, until told to stop; then give everything back. Every
// successful reservation checks right away that the ranks' committed bytes stay within the budget.
void reserve_and_release_at_random(HostLedger& l, Shared* shared, int r, int ranks, uint64_t budget,
                                   std::atomic<uint64_t>* own_successes) {
  std::mt19937_64 rng(r + 1000 * getpid());
  std::vector<uint64_t> held;
  for (uint64_t round = 1; shared->stop.load() == 0; ++round) {
    if (round % 4096 == 0) l.recover_dead();  // what the runtime's service thread does
    if (held.empty() || rng() % 2 == 0) {
      const uint64_t bytes = (1 + rng() % 8) * kMiB;
      if (l.try_reserve(bytes)) {
        const uint64_t after = shared->committed_mib.fetch_add(field(r, bytes)) + field(r, bytes);
        if (total_bytes(after, ranks) > budget) shared->overshoots.fetch_add(1);
        shared->successes.fetch_add(1);
        if (own_successes != nullptr) own_successes->fetch_add(1);
        held.push_back(bytes);
      }
    } else {
      shared->committed_mib.fetch_sub(field(r, held.back()));  // before the release: never less than held
      l.release(held.back());
      held.pop_back();
    }
  }
  for (uint64_t b : held) {
    shared->committed_mib.fetch_sub(field(r, b));
    l.release(b);
  }
}

// Hazard: ranks killed with SIGKILL at arbitrary instructions of their reservations and releases.
// Three steady ranks reserve and release at random while ten victim ranks, one after the other, do the
// same and are killed mid-run. The bytes the ranks hold after successful reservations never exceed
// the budget. After recovery, with the steady ranks holding nothing, the ledger counts at most the
// bytes the victims had in flight when killed (one extent each: stranded, never negative); a victim
// killed between its two updates of a reservation or a release lands there about one time in three,
// and with the updates in the wrong order recovery would take out more than the victim added (seen as
// a count far above that bound, or an overshoot). Once every rank has gone, a fresh join gives the
// stranded bytes back.
TEST_F(Ledger, RanksKilledMidReservationStrandNoMoreThanTheirBytesInFlight) {
  constexpr int kSteady = 3, kRanks = kSteady + 1;  // field kSteady is the current victim's
  constexpr int kVictims = 10;
  constexpr uint64_t kBudget = 64 * kMiB, kLargestExtent = 8 * kMiB;
  Shared* shared = map_shared();
  auto fork_rank = [&](int r, bool victim) {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    HostLedger l;
    if (!l.join(path_, kBudget, getpid(), process_start_time(getpid())).is_ok()) _exit(1);
    shared->ready.fetch_add(1);
    reserve_and_release_at_random(l, shared, r, kRanks, kBudget, victim ? &shared->victim_successes : nullptr);
    shared->ready.fetch_add(100);  // a steady rank gave everything back; it leaves when told
    while (shared->stop.load() != 2) usleep(1000);
    l.leave();
    _exit(0);
  };
  std::vector<pid_t> steady;
  for (int r = 0; r < kSteady; ++r) {
    steady.push_back(fork_rank(r, false));
    ASSERT_GE(steady.back(), 0);
  }
  uint64_t samples = 0, worst = 0;
  for (int v = 0; v < kVictims; ++v) {
    shared->victim_successes.store(0);
    const pid_t victim = fork_rank(kSteady, true);
    ASSERT_GE(victim, 0);
    while (shared->victim_successes.load() < 20000) {
      worst = std::max(worst, total_bytes(shared->committed_mib.load(), kRanks));
      ++samples;
    }
    ASSERT_EQ(kill(victim, SIGKILL), 0);
    // Dead but not reaped: its field no longer changes, and its slot cannot be recovered yet (a zombie
    // counts as alive). What it held is gone with it; only then may the others reserve those bytes.
    siginfo_t info;
    ASSERT_EQ(waitid(P_PID, victim, &info, WEXITED | WNOWAIT), 0);
    shared->committed_mib.fetch_sub(field_of(shared->committed_mib.load(), kSteady) << (kFieldBits * kSteady));
    ASSERT_EQ(waitpid(victim, nullptr, 0), victim);
  }
  EXPECT_LE(worst, kBudget) << "over " << samples << " samples";
  EXPECT_EQ(shared->overshoots.load(), 0u);
  shared->stop.store(1);
  while (shared->ready.load() < kSteady + kVictims + 100 * kSteady) usleep(1000);
  // An observer rank, in a process of its own so that it can leave and be gone: the steady ranks still
  // hold their slots, so its join resets nothing; it recovers the last victim and reads the ledger.
  const pid_t observer = fork();
  ASSERT_GE(observer, 0);
  if (observer == 0) {
    HostLedger l;
    if (!l.join(path_, kBudget, getpid(), process_start_time(getpid())).is_ok()) _exit(1);
    l.recover_dead();
    shared->observed.store(l.host_held());
    l.leave();
    _exit(0);
  }
  ASSERT_TRUE(exited_cleanly(observer));
  EXPECT_LE(shared->observed.load(), kVictims * kLargestExtent) << "stranded (a wrap-around is an over-recovery)";
  shared->stop.store(2);
  for (pid_t child : steady) EXPECT_TRUE(exited_cleanly(child));
  HostLedger fresh;  // every process that had a slot has exited: stranded bytes come back
  ASSERT_TRUE(join(fresh, kBudget));
  EXPECT_EQ(fresh.host_held(), 0u);
  EXPECT_LE(fresh.peak_host_held(), kBudget);
  EXPECT_TRUE(fresh.try_reserve(kBudget));
  fresh.release(kBudget);
  munmap(shared, sizeof(Shared));
}

// Hazard: two survivors recover the same dead rank at the same moment. Three recoverer ranks wait on
// one flag and call recover_dead() together, over 20 rounds with a fresh victim each: the bytes
// they report add up to exactly the victim's share each round, and the ledger is back at 0.
TEST_F(Ledger, ConcurrentRecoverersTakeADeadRanksShareOutOnce) {
  constexpr int kRecoverers = 3, kRounds = 20;
  constexpr uint64_t kShare = 5 * kMiB;
  Shared* shared = map_shared();
  std::vector<pid_t> recoverers;
  for (int i = 0; i < kRecoverers; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      HostLedger l;
      if (!l.join(path_, 10 * kMiB, getpid(), process_start_time(getpid())).is_ok()) _exit(1);
      shared->ready.fetch_add(1);
      for (uint64_t round = 1; round <= kRounds; ++round) {
        while (shared->round.load() < round) {
        }
        shared->reclaimed.fetch_add(l.recover_dead());
        shared->done.fetch_add(1);
      }
      l.leave();
      _exit(0);
    }
    recoverers.push_back(pid);
  }
  while (shared->ready.load() < kRecoverers) usleep(1000);
  HostLedger reader;
  ASSERT_TRUE(join(reader, 10 * kMiB));
  for (uint64_t round = 1; round <= kRounds; ++round) {
    shared->observed.store(0);
    const pid_t victim = fork();
    ASSERT_GE(victim, 0);
    if (victim == 0) {
      // Joins without recovering anything: the previous victim was recovered in the last round.
      HostLedger l;
      if (!l.join(path_, 10 * kMiB, getpid(), process_start_time(getpid())).is_ok() || !l.try_reserve(kShare)) _exit(1);
      shared->observed.store(1);
      for (;;) pause();
    }
    while (shared->observed.load() == 0) usleep(100);
    EXPECT_EQ(reader.host_held(), kShare);
    ASSERT_EQ(kill(victim, SIGKILL), 0);
    ASSERT_EQ(waitpid(victim, nullptr, 0), victim);
    const uint64_t before = shared->reclaimed.load();
    shared->round.store(round);  // all recoverers go at once
    while (shared->done.load() < round * kRecoverers) usleep(100);
    EXPECT_EQ(shared->reclaimed.load() - before, kShare) << "round " << round;
    EXPECT_EQ(reader.host_held(), 0u) << "round " << round;
  }
  for (pid_t child : recoverers) EXPECT_TRUE(exited_cleanly(child));
  reader.leave();
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
