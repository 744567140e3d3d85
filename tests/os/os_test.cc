// The OS layer (os/os.h) and its fault injector (os/fault_injector.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "os/fault_injector.h"
#include "os/os.h"

namespace sentinel::os {
namespace {

int g_fake_mbind_calls = 0;
long counting_mbind(void*, unsigned long, int, const unsigned long*, unsigned long, unsigned) {
  ++g_fake_mbind_calls;
  errno = EPERM;
  return -1;
}

TEST(OsLayer, InstalledTableReplacesTheKernelAndRestores) {
  Calls table = kernel();
  table.mbind = counting_mbind;
  const Calls* before = install(&table);
  EXPECT_EQ(before, &kernel());
  unsigned long mask = 1;
  errno = 0;
  EXPECT_EQ(mbind(nullptr, 4096, 0, &mask, 2, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(g_fake_mbind_calls, 1);
  install(before);
  EXPECT_EQ(&active(), &kernel());
}

TEST(OsLayer, ReadSmallFileReadsAndTerminates) {
  char buf[64];
  ASSERT_GT(read_small_file("/proc/self/stat", buf, sizeof buf), 0);
  EXPECT_EQ(std::strlen(buf), sizeof buf - 1);  // /proc/self/stat is longer than the buffer: truncated
  errno = 0;
  EXPECT_EQ(read_small_file("/nonexistent/sentinel", buf, sizeof buf), -1);
  EXPECT_EQ(errno, ENOENT);
}

TEST(FaultSpec, ParsesSeedRateAndOps) {
  FaultConfig c;
  ASSERT_TRUE(parse_fault_spec("42:0.25", &c));
  EXPECT_EQ(c.seed, 42u);
  EXPECT_DOUBLE_EQ(c.rate, 0.25);
  EXPECT_EQ(c.ops, kAllFailableOps);
  ASSERT_TRUE(parse_fault_spec("7:1:move_pages,mbind", &c));
  EXPECT_EQ(c.ops, op_bit(Op::kMovePages) | op_bit(Op::kMbind));
  EXPECT_DOUBLE_EQ(c.rate, 1.0);
  for (const char* bad : {"", ":0.1", "1", "1:", "1:1.5", "1:0.1:", "1:0.1:munmap", "1:0.1:mbind,", "x:0.1",
                          "1:0.1x", "99999999999999999999:0.1", "1:-0.1"}) {
    EXPECT_FALSE(parse_fault_spec(bad, &c)) << bad;
  }
}

TEST(FaultInjector, FailsAtTheRateDeterministicallyAndRestores) {
  auto run = [](uint64_t seed) {
    const FaultConfig c{.seed = seed, .rate = 0.3, .ops = op_bit(Op::kMadvise)};
    ScopedFaultInjection inject(c);
    EXPECT_TRUE(inject.started());
    EXPECT_FALSE(start_fault_injection(c));  // one injector at a time
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::vector<bool> failed;
    for (int i = 0; i < 2000; ++i) {
      errno = 0;
      const int r = madvise(p, 4096, MADV_DONTNEED);
      if (r != 0) {
        EXPECT_TRUE(errno == EAGAIN || errno == ENOMEM || errno == EINVAL);
      }
      failed.push_back(r != 0);
      unsigned char vec = 0;
      EXPECT_EQ(mincore(p, 4096, &vec), 0);  // not in `ops`: never fails
    }
    ::munmap(p, 4096);
    const FaultCounts counts = fault_counts();
    EXPECT_EQ(counts.calls[static_cast<int>(Op::kMadvise)], 2000u);
    EXPECT_GT(counts.failed[static_cast<int>(Op::kMadvise)], 450u);
    EXPECT_LT(counts.failed[static_cast<int>(Op::kMadvise)], 750u);
    EXPECT_EQ(counts.failed[static_cast<int>(Op::kMincore)], 0u);
    return failed;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
  EXPECT_EQ(&active(), &kernel());
}

TEST(FaultInjector, PartialMovePagesLeavesFailedPagesOutOfTheCall) {
  // Counts which pages reach the "kernel" below the injector.
  static std::vector<void*> seen;
  static Calls below = kernel();
  below.move_pages = [](int, unsigned long count, void** pages, const int* nodes, int* status, int) -> long {
    for (unsigned long k = 0; k < count; ++k) {
      seen.push_back(pages[k]);
      status[k] = nodes[k];
    }
    return 0;
  };
  const Calls* before = install(&below);
  const FaultConfig c{.seed = 3, .rate = 1.0, .ops = op_bit(Op::kMovePages), .partial_share = 0.25};
  uint64_t partial_calls = 0;
  {
    ScopedFaultInjection inject(c);
    constexpr unsigned long kPages = 600;  // more than one internal block
    std::vector<void*> pages(kPages);
    std::vector<int> nodes(kPages, 1), status(kPages, 1000);
    for (unsigned long k = 0; k < kPages; ++k) pages[k] = reinterpret_cast<void*>(uintptr_t{0x10000} + k * 4096);
    for (int round = 0; round < 20; ++round) {
      seen.clear();
      std::fill(status.begin(), status.end(), 1000);
      errno = 0;
      const long r = move_pages(0, kPages, pages.data(), nodes.data(), status.data(), 0);
      if (r < 0) {
        EXPECT_TRUE(errno == ENOMEM || errno == EPERM || errno == EFAULT || errno == EACCES);
        EXPECT_TRUE(seen.empty());  // a whole-call failure does nothing
        continue;
      }
      ++partial_calls;
      size_t failed = 0;
      for (unsigned long k = 0; k < kPages; ++k) {
        const bool reached = std::find(seen.begin(), seen.end(), pages[k]) != seen.end();
        if (status[k] < 0) {
          ++failed;
          EXPECT_FALSE(reached) << "a failed page must not have been moved";
          EXPECT_TRUE(status[k] == -EBUSY || status[k] == -ENOMEM || status[k] == -EACCES);
        } else {
          EXPECT_TRUE(reached);
          EXPECT_EQ(status[k], 1);
        }
      }
      EXPECT_GT(failed, kPages / 8);
      EXPECT_LT(failed, kPages / 2);
    }
    EXPECT_GT(fault_counts().pages_failed, 0u);
  }
  install(before);
  EXPECT_GT(partial_calls, 0u);
}

}  // namespace
}  // namespace sentinel::os
