// The dry run's booking kernel (os/dry_run.h): binds and moves to a simulated node are booked, queries
// answer from the book, the data never moves, moves take the channel's modeled time, and the migration
// engine and the placement helpers work over it unchanged.
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "migrate/engine.h"
#include "os/dry_run.h"
#include "os/os.h"
#include "place/extent_binding.h"

namespace sentinel::os {
namespace {

constexpr size_t kPage = 4096;
constexpr int kSim = 1;  // the simulated slow node (this machine has node 0 only; tests run on any)

// A mapping of `pages` pages with a dry run booking it, stopped and unmapped at the end.
struct Booked {
  explicit Booked(size_t pages, double bw_gbps = 0) : len(pages * kPage) {
    base = static_cast<char*>(::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    DryRunConfig c;
    c.start = reinterpret_cast<uintptr_t>(base);
    c.len = len;
    c.simulated_node = kSim;
    c.real_nodes = 1;  // node 0
    c.migration_bw_gbps = bw_gbps;
    started = base != MAP_FAILED && start_dry_run(c);
  }
  ~Booked() {
    stop_dry_run();
    if (base != MAP_FAILED) ::munmap(base, len);
  }
  void touch(size_t from, size_t n) {
    for (size_t i = from; i < from + n; ++i) std::memset(base + i * kPage, static_cast<int>(i & 0xff), kPage);
  }
  bool intact(size_t from, size_t n) const {
    for (size_t i = from; i < from + n; ++i)
      for (size_t b = 0; b < kPage; b += 512)
        if (static_cast<unsigned char>(base[i * kPage + b]) != (i & 0xff)) return false;
    return true;
  }
  std::vector<int> nodes(size_t from, size_t n) {
    std::vector<void*> pages(n);
    for (size_t i = 0; i < n; ++i) pages[i] = base + (from + i) * kPage;
    std::vector<int> status(n, -1000);
    EXPECT_EQ(os::move_pages(0, n, pages.data(), nullptr, status.data(), 0), 0);
    return status;
  }
  long move(size_t from, size_t n, int node, std::vector<int>* status) {
    std::vector<void*> pages(n);
    for (size_t i = 0; i < n; ++i) pages[i] = base + (from + i) * kPage;
    std::vector<int> targets(n, node);
    status->assign(n, -1000);
    return os::move_pages(0, n, pages.data(), targets.data(), status->data(), MPOL_MF_MOVE);
  }
  char* base;
  size_t len;
  bool started = false;
};

TEST(DryRun, MovesAreBookedAndQueriesAnswerFromTheBook) {
  Booked b(64);
  ASSERT_TRUE(b.started);
  b.touch(0, 32);  // pages 32..63 stay absent
  std::vector<int> status;
  ASSERT_EQ(b.move(0, 64, kSim, &status), 0);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(status[i], kSim) << i;
  for (size_t i = 32; i < 64; ++i) EXPECT_LT(status[i], 0) << "an absent page is not moved: " << i;
  std::vector<int> now = b.nodes(0, 64);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(now[i], kSim);
  for (size_t i = 32; i < 64; ++i) EXPECT_LT(now[i], 0);
  EXPECT_TRUE(b.intact(0, 32));
  // The kernel itself still has every page where it was: nothing moved for real.
  std::vector<void*> pages(32);
  for (size_t i = 0; i < 32; ++i) pages[i] = b.base + i * kPage;
  std::vector<int> real(32, -1);
  ASSERT_EQ(kernel().move_pages(0, 32, pages.data(), nullptr, real.data(), 0), 0);
  for (int r : real) EXPECT_EQ(r, 0);
  DryRunCounts c = dry_run_counts();
  EXPECT_EQ(c.pages_to_simulated, 32u);
  EXPECT_EQ(c.pages_on_simulated, 32u);
  // And back.
  ASSERT_EQ(b.move(0, 16, 0, &status), 0);
  c = dry_run_counts();
  EXPECT_EQ(c.pages_from_simulated, 16u);
  EXPECT_EQ(c.pages_on_simulated, 16u);
  now = b.nodes(0, 32);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(now[i], 0);
  for (size_t i = 16; i < 32; ++i) EXPECT_EQ(now[i], kSim);
}

TEST(DryRun, UnknownNodeFailsLikeTheKernelAndBooksNothing) {
  Booked b(8);
  ASSERT_TRUE(b.started);
  b.touch(0, 8);
  std::vector<int> status;
  errno = 0;
  EXPECT_EQ(b.move(0, 8, 5, &status), -1);
  EXPECT_EQ(errno, ENODEV);
  unsigned long mask = 1ul << 5;
  errno = 0;
  EXPECT_EQ(os::mbind(b.base, b.len, MPOL_PREFERRED, &mask, 64, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  for (int n : b.nodes(0, 8)) EXPECT_EQ(n, 0);
  EXPECT_EQ(dry_run_counts().pages_on_simulated, 0u);
}

TEST(DryRun, BindPlacesPagesNotYetTouchedAndDontneedBringsThemBackThere) {
  Booked b(16);
  ASSERT_TRUE(b.started);
  b.touch(0, 4);  // present before the bind: they stay where they are (no MPOL_MF_MOVE)
  std::string_view why;
  int err = 0;
  ASSERT_TRUE(place::bind_range(b.base, b.len, kSim, place::BindMode::kPreferred, false, &why, &err)) << why;
  b.touch(4, 12);
  std::vector<int> now = b.nodes(0, 16);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(now[i], 0) << i;
  for (size_t i = 4; i < 16; ++i) EXPECT_EQ(now[i], kSim) << i;
  int mode = -1, node = -1;
  ASSERT_TRUE(place::query_policy(b.base, &mode, &node));
  EXPECT_EQ(mode, MPOL_PREFERRED);
  EXPECT_EQ(node, kSim);
  // Dropped pages fault in again on the policy's node.
  ASSERT_EQ(os::madvise(b.base, 4 * kPage, MADV_DONTNEED), 0);
  b.touch(0, 4);
  now = b.nodes(0, 4);
  for (int n : now) EXPECT_EQ(n, kSim);
  // rebind_discarding to the real node: every page lands there.
  ASSERT_TRUE(place::rebind_discarding(b.base, b.len, 0, place::BindMode::kPreferred, &why, &err)) << why;
  b.touch(0, 16);
  for (int n : b.nodes(0, 16)) EXPECT_EQ(n, 0);
  EXPECT_EQ(dry_run_counts().pages_on_simulated, 0u);
}

// dry_run_book_refault: what MADV_DONTNEED books (every page on its policy's node) while the pages and their
// bytes stay: a kept extent bound to another node is where a tiered machine would fault it in again.
TEST(DryRun, BookedRefaultMovesPresentPagesToTheirPolicysNodeAndKeepsTheirBytes) {
  Booked b(16);
  ASSERT_TRUE(b.started);
  b.touch(0, 16);
  std::string_view why;
  int err = 0;
  ASSERT_TRUE(place::bind_range(b.base, b.len, kSim, place::BindMode::kPreferred, false, &why, &err)) << why;
  for (int n : b.nodes(0, 16)) EXPECT_EQ(n, 0) << "present pages stay without MPOL_MF_MOVE";
  ASSERT_TRUE(dry_run_book_refault(b.base, b.len));
  for (int n : b.nodes(0, 16)) EXPECT_EQ(n, kSim);
  EXPECT_TRUE(b.intact(0, 16));
  EXPECT_EQ(dry_run_counts().pages_on_simulated, 16u);
  EXPECT_EQ(dry_run_counts().moves, 0u) << "no modeled move";
  // Outside the book nothing is booked.
  char outside[kPage];
  EXPECT_FALSE(dry_run_book_refault(outside, sizeof outside));
  EXPECT_FALSE(dry_run_book_refault(b.base, b.len + kPage));
}

TEST(DryRun, CallsOutsideTheRangeGoToTheKernel) {
  Booked b(4);
  ASSERT_TRUE(b.started);
  void* other = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(other, MAP_FAILED);
  std::memset(other, 1, kPage);
  int target = kSim, st = 0;
  // The kernel knows no node 1 here (or, on a two-node machine, really moves the page): either way the
  // answer is the kernel's, not the book's.
  const long r = os::move_pages(0, 1, &other, &target, &st, MPOL_MF_MOVE);
  const long k = kernel().move_pages(0, 1, &other, nullptr, &st, 0);
  EXPECT_EQ(k, 0);
  if (r == 0) {
    EXPECT_EQ(st, kSim);
  } else {
    EXPECT_EQ(st, 0);
  }
  EXPECT_EQ(dry_run_counts().moves, 0u);
  ::munmap(other, kPage);
}

TEST(DryRun, MovesTakeTheChannelsModeledTime) {
  // 0.1 GB/s: 256 pages (1 MiB) take 10.5 ms of modeled time; the sleep is at least that.
  Booked b(256, 0.1);
  ASSERT_TRUE(b.started);
  b.touch(0, 256);
  std::vector<int> status;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(b.move(0, 256, kSim, &status), 0);
  const auto slept = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(slept, std::chrono::microseconds(10400));
  EXPECT_NEAR(static_cast<double>(dry_run_counts().paced_ns), 256 * 4096 / 0.1, 1000.0);
  // Pages already on the target cost nothing.
  const uint64_t before = dry_run_counts().paced_ns;
  ASSERT_EQ(b.move(0, 256, kSim, &status), 0);
  EXPECT_EQ(dry_run_counts().paced_ns, before);
}

// The kernel, with its move_pages calls counted.
std::atomic<int> g_kernel_move_pages{0};
long counted_move_pages(int pid, unsigned long count, void** pages, const int* nodes, int* status, int flags) {
  g_kernel_move_pages.fetch_add(1);
  return kernel().move_pages(pid, count, pages, nodes, status, flags);
}

TEST(DryRun, OnOneRealNodePresenceComesFromMincoreAndAgreesWithTheKernel) {
  Calls counting = kernel();
  counting.move_pages = counted_move_pages;
  const Calls* before = install(&counting);
  {
    Booked b(16);
    ASSERT_TRUE(b.started);
    b.touch(0, 4);
    b.touch(9, 1);
    // Runs broken where the engine's retries break them: 0-5, then 9, then 14-15.
    std::vector<void*> pages;
    for (size_t i : {0, 1, 2, 3, 4, 5, 9, 14, 15}) pages.push_back(b.base + i * kPage);
    std::vector<int> booked(pages.size(), -1000), real(pages.size(), -1000);
    g_kernel_move_pages = 0;
    ASSERT_EQ(os::move_pages(0, pages.size(), pages.data(), nullptr, booked.data(), 0), 0);
    EXPECT_EQ(g_kernel_move_pages.load(), 0) << "a query on a one-node machine reads mincore only";
    ASSERT_EQ(kernel().move_pages(0, pages.size(), pages.data(), nullptr, real.data(), 0), 0);
    for (size_t k = 0; k < pages.size(); ++k) {
      if (real[k] >= 0) {
        EXPECT_EQ(booked[k], real[k]) << k;
      } else {
        EXPECT_EQ(booked[k], -ENOENT) << k;  // never touched: the kernel says -ENOENT or (before 6.5) -EFAULT
      }
    }
    EXPECT_EQ(booked[6], 0);
    EXPECT_EQ(booked[4], -ENOENT);
    // A hole mincore cannot read: the kernel answers the whole query, -EFAULT for the hole.
    ASSERT_EQ(::munmap(b.base + 14 * kPage, kPage), 0);
    g_kernel_move_pages = 0;
    ASSERT_EQ(os::move_pages(0, pages.size(), pages.data(), nullptr, booked.data(), 0), 0);
    EXPECT_EQ(g_kernel_move_pages.load(), 1);
    EXPECT_EQ(booked[7], -EFAULT);
    EXPECT_EQ(booked[0], 0);
  }
  install(before);
}

TEST(DryRun, ShortMovesKeepTheChannelsTimeWithoutSpinning) {
  // 200 one-page moves of 40 us each (0.1024 GB/s): 8 ms of modeled channel time. The thread that moves
  // sleeps through it (the old pacing spun the last 150 us of every move: all of these).
  Booked b(200, 0.1024);
  ASSERT_TRUE(b.started);
  b.touch(0, 200);
  std::vector<int> status;
  timespec cpu0{}, cpu1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < 200; ++i) ASSERT_EQ(b.move(i, 1, kSim, &status), 0);
  const auto wall = std::chrono::steady_clock::now() - t0;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
  const double cpu_ns = (cpu1.tv_sec - cpu0.tv_sec) * 1e9 + static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec);
  EXPECT_EQ(dry_run_counts().paced_ns, 200u * 40000u);
  // Never faster than the channel, but for the last move's unslept wait and one credited oversleep.
  EXPECT_GE(wall, std::chrono::microseconds(8000 - 50 - 150));
  EXPECT_LT(cpu_ns, 4e6) << "the moving thread used the CPU for half the channel's time or more";
}

TEST(DryRun, MigrationEngineMovesObjectsToTheSimulatedNodeAndBack) {
  Booked b(1024, 3.3);
  ASSERT_TRUE(b.started);
  b.touch(0, 1024);
  migrate::EngineConfig cfg;
  cfg.fast_node = 0;
  cfg.slow_node = kSim;
  migrate::Engine e(cfg);
  std::string error;
  ASSERT_TRUE(e.start(&error)) << error;
  migrate::MoveResult r;
  ASSERT_EQ(e.wait(e.enqueue(1, 1, b.base, b.len, kSim, migrate::Priority::kNormal), std::chrono::seconds(30), &r),
            migrate::State::kDone)
      << migrate::to_string(r.reason);
  EXPECT_EQ(r.pages_moved, 1024u);
  for (int n : b.nodes(0, 1024)) ASSERT_EQ(n, kSim);
  int mode = -1, node = -1;
  ASSERT_TRUE(place::query_policy(b.base, &mode, &node));  // the engine's mbind after the move
  EXPECT_EQ(node, kSim);
  ASSERT_EQ(e.wait(e.enqueue(1, 2, b.base, b.len, 0, migrate::Priority::kNormal), std::chrono::seconds(30), &r),
            migrate::State::kDone);
  for (int n : b.nodes(0, 1024)) ASSERT_EQ(n, 0);
  const migrate::StatsSnapshot st = e.snapshot();
  EXPECT_EQ(st.bytes_to_slow, 1024u * 4096);
  EXPECT_EQ(st.bytes_to_fast, 1024u * 4096);
  // The engine's measured bandwidth (what managed mode compares with the plan's) is never above the modeled
  // channel's: every move waited at least its modeled time. (How far below depends on the machine's load.)
  const double measured = static_cast<double>(st.bytes_to_slow + st.bytes_to_fast) / static_cast<double>(st.move_ns);
  EXPECT_LE(measured, 3.3);
  EXPECT_TRUE(b.intact(0, 1024));
  e.stop();
}

TEST(DryRun, RejectsInvalidConfigurations) {
  DryRunConfig c;
  EXPECT_FALSE(start_dry_run(c));  // empty range
  c.start = 4096;
  c.len = 4096;
  c.simulated_node = 0;
  c.real_nodes = 1;
  EXPECT_FALSE(start_dry_run(c));  // the simulated node is a real one
  c.simulated_node = 200;
  EXPECT_FALSE(start_dry_run(c));
  EXPECT_FALSE(dry_run_running());
}

}  // namespace
}  // namespace sentinel::os
