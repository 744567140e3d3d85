#include "vcpu_sync.h"

#include <gtest/gtest.h>

namespace sentinel::slowtier {
namespace {

TEST(VcpuSync, TheSlowestBusyOtherHoldsBack) {
  const double clocks[3] = {100, 50, 80};
  const bool idle[3] = {false, false, false};
  EXPECT_EQ(slowest_busy_other(clocks, idle, 3, 0), 50);
  EXPECT_EQ(slowest_busy_other(clocks, idle, 3, 1), 80);  // itself does not count
}

TEST(VcpuSync, IdleVcpusHoldNobodyBack) {
  const double clocks[2] = {100, 10};
  const bool idle[2] = {false, true};
  EXPECT_EQ(slowest_busy_other(clocks, idle, 2, 0), kNoBusyVcpu);
  VcpuSyncParams p;
  EXPECT_FALSE(must_wait(100, kNoBusyVcpu, p));
}

TEST(VcpuSync, WaitOnlyBeyondTheQuantum) {
  VcpuSyncParams p;
  p.quantum_ns = 20;
  EXPECT_FALSE(must_wait(70, 50, p));
  EXPECT_TRUE(must_wait(71, 50, p));
  p.quantum_ns = 0;  // off
  EXPECT_FALSE(must_wait(1e9, 0, p));
}

}  // namespace
}  // namespace sentinel::slowtier
