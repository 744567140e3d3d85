// os::make_resident (os/resident.h): static storage never written is not resident; afterwards every page
// of it is, and its contents are what they were.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "os/fault_injector.h"
#include "os/os.h"
#include "os/resident.h"

namespace sentinel::os {
namespace {

constexpr size_t kBytes = size_t{1} << 20;
alignas(4096) unsigned char g_untouched[kBytes];  // zero-initialised, so no page of it is mapped yet
alignas(4096) unsigned char g_refused[kBytes];

size_t resident_pages(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  if (::mincore(const_cast<void*>(p), bytes, vec.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST(MakeResident, FaultsInEveryPageAndKeepsTheContents) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = kBytes / page;
  g_untouched[5 * page + 7] = 42;  // one page written by the program before
  ASSERT_LT(resident_pages(g_untouched, kBytes), pages / 2);
  // An unaligned range: every page it touches, the first and last partly covered ones too.
  if (!make_resident(g_untouched + 1, kBytes - 2)) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE";
  EXPECT_EQ(resident_pages(g_untouched, kBytes), pages);
  EXPECT_EQ(g_untouched[5 * page + 7], 42);
  for (size_t i = 0; i < kBytes; ++i) {
    if (i != 5 * page + 7) {
      ASSERT_EQ(g_untouched[i], 0) << i;
    }
  }
}

TEST(MakeResident, ARefusingKernelIsReportedAndChangesNothing) {
  FaultConfig config;
  config.rate = 1.0;
  config.ops = op_bit(Op::kMadvise);
  ScopedFaultInjection injection(config);
  ASSERT_TRUE(injection.started());
  EXPECT_FALSE(make_resident(g_refused, kBytes));
  EXPECT_EQ(resident_pages(g_refused, kBytes), 0u);
}

}  // namespace
}  // namespace sentinel::os
