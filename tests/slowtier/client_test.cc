// The guest library outside the guest: with no plugin to answer, reads fail cleanly (the marker is
// an ordinary NOP on real hardware and under plain QEMU).
#include <errno.h>
#include <sys/mman.h>

#include <gtest/gtest.h>

#include "os/slowtier_mailbox.h"
#include "sentinel/slowtier.h"

namespace {

TEST(SlowTierClient, WithoutThePluginReadsFailWithEnodev) {
  sentinel_slowtier_counters c;
  errno = 0;
  EXPECT_EQ(sentinel_slowtier_read(&c), -1);
  EXPECT_EQ(errno, ENODEV);
}

TEST(SlowTierClient, CallerPageMustBePageAligned) {
  void* page = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  sentinel_slowtier_counters c;
  errno = 0;
  EXPECT_EQ(sentinel_slowtier_read_with_page(static_cast<char*>(page) + 64, &c), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(sentinel_slowtier_read_with_page(page, &c), -1);
  EXPECT_EQ(errno, ENODEV);
  // The request left the cookie in place for the plugin to find.
  EXPECT_EQ(0, memcmp(page, sentinel::slowtier::kMailboxCookie, 16));
  munmap(page, 8192);
}

// tools/qemu-slowtier/slowtier.py mirrors this layout with ctypes; its test checks the same size.
TEST(SlowTierClient, CountersLayoutIsThePythonHelpers) {
  EXPECT_EQ(sizeof(sentinel_slowtier_counters), 400u);  // tests/slowtier/slowtier_py_test.py checks ctypes too
}

}  // namespace
