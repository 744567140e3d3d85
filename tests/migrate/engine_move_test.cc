// Page moving: no-op moves to node 0, absent pages, invalid nodes, unmapped ranges, and (with two
// nodes, i.e. in the guest) real moves both ways with direction statistics.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <chrono>

#include "migrate/engine.h"
#include "test_util.h"

namespace sentinel::migrate {
namespace {

using testing::Mapping;
constexpr auto kForever = std::chrono::hours(1);

struct Started {
  explicit Started(EngineConfig cfg = {}) : e(cfg) {
    std::string err;
    ok = e.start(&err);
  }
  Engine e;
  bool ok;
};

TEST(EngineMove, NoOpMoveToNodeZeroSucceedsForEveryPage) {
  Started s;
  ASSERT_TRUE(s.ok);
  Mapping m(4 << 20);
  m.fill(7);
  MoveResult r;
  ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, m.addr, m.len, 0, Priority::kNormal), kForever, &r), State::kDone);
  EXPECT_EQ(r.pages, (4u << 20) / 4096);
  EXPECT_EQ(r.pages_moved, r.pages);  // status == 0 for every page
  EXPECT_EQ(r.pages_failed, 0u);
  EXPECT_EQ(testing::pages_on(m.addr, m.len, 0), r.pages);
  EXPECT_TRUE(m.check(7));
  auto st = s.e.snapshot();
  EXPECT_EQ(st.moves_done, 1u);
  EXPECT_EQ(st.objects_other, 1u);  // no slow node configured: neither direction
  EXPECT_EQ(st.bytes_other, 4u << 20);
  EXPECT_GT(st.move_ns, 0u);
}

TEST(EngineMove, UnalignedRangeCoversWholePages) {
  Started s;
  Mapping m(3 * 4096);
  m.fill(1);
  MoveResult r;
  ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, m.addr + 100, 4096, 0, Priority::kNormal), kForever, &r), State::kDone);
  EXPECT_EQ(r.pages, 2u);
}

TEST(EngineMove, UntouchedPagesAreAbsentNotFailures) {
  Started s;
  Mapping m(1 << 20);
  MoveResult r;
  ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, m.addr, m.len, 0, Priority::kNormal), kForever, &r), State::kDone);
  EXPECT_EQ(r.pages_absent, r.pages);
  EXPECT_EQ(r.pages_failed, 0u);
  EXPECT_EQ(s.e.snapshot().pages_absent, r.pages);
}

TEST(EngineMove, InvalidNodeIsACountedFailureAndDataStays) {
  Started s;
  Mapping m(1 << 20);
  m.fill(3);
  for (int bad : {numa_max_node() + 1, 4096}) {
    MoveResult r;
    ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, m.addr, m.len, bad, Priority::kNormal), kForever, &r), State::kFailed);
    EXPECT_EQ(r.reason, FailReason::kInvalidNode) << to_string(r.reason);
    EXPECT_EQ(r.pages_moved, 0u);
    EXPECT_TRUE(m.check(3));
  }
  auto st = s.e.snapshot();
  EXPECT_EQ(st.moves_failed, 2u);
  EXPECT_EQ(st.moves_done, 0u);
  EXPECT_EQ(st.pages_other_error, 2 * m.len / 4096);
  EXPECT_EQ(testing::pages_on(m.addr, m.len, 0), m.len / 4096);
}

TEST(EngineMove, UnmappedRangeIsAFaultFailure) {
  Started s;
  // Just above the 47-bit user half: never mapped (the kernel hands out addresses there only when asked,
  // with 5-level paging). A range unmapped with munmap could be mapped again by another thread before the
  // engine looks, and under AddressSanitizer it was: 47 of its 256 pages.
  void* p = reinterpret_cast<void*>(uintptr_t{1} << 47);
  MoveResult r;
  ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, p, 1 << 20, 0, Priority::kNormal), kForever, &r), State::kFailed);
  EXPECT_EQ(r.reason, FailReason::kFault) << to_string(r.reason);
  EXPECT_EQ(r.pages_failed, r.pages);
}

TEST(EngineMove, SetsPolicySoUntouchedPagesFaultOnTarget) {
  if (!testing::have_two_nodes()) GTEST_SKIP() << "needs two memory nodes (ctest -L guest)";
  Started s;
  Mapping m(2 << 20);
  std::memset(m.addr, 1, 4096);  // one page present, the rest untouched
  MoveResult r;
  ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, m.addr, m.len, 1, Priority::kNormal), kForever, &r), State::kDone);
  EXPECT_EQ(r.pages_moved, 1u);
  std::memset(m.addr, 2, m.len);  // touch the rest now
  EXPECT_EQ(testing::pages_on(m.addr, m.len, 1), m.len / 4096);
}

TEST(EngineMove, MovesBothWaysAndCountsDirections) {
  if (!testing::have_two_nodes()) GTEST_SKIP() << "needs two memory nodes (ctest -L guest)";
  EngineConfig cfg;
  cfg.fast_node = 0;
  cfg.slow_node = 1;
  Started s(cfg);
  Mapping m(8 << 20);
  m.fill(9);
  MoveResult r;
  ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, m.addr, m.len, 1, Priority::kNormal), kForever, &r), State::kDone);
  EXPECT_EQ(testing::pages_on(m.addr, m.len, 1), m.len / 4096);
  EXPECT_TRUE(m.check(9));
  ASSERT_EQ(s.e.wait(s.e.enqueue(1, 1, m.addr, m.len, 0, Priority::kHigh), kForever, &r), State::kDone);
  EXPECT_EQ(testing::pages_on(m.addr, m.len, 0), m.len / 4096);
  EXPECT_TRUE(m.check(9));
  auto st = s.e.snapshot();
  EXPECT_EQ(st.objects_to_slow, 1u);
  EXPECT_EQ(st.bytes_to_slow, 8u << 20);
  EXPECT_EQ(st.objects_to_fast, 1u);
  EXPECT_EQ(st.bytes_to_fast, 8u << 20);
}

}  // namespace
}  // namespace sentinel::migrate
