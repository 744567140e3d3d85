#include "migrate/channel_fit.h"

#include <gtest/gtest.h>

namespace sentinel::migrate {
namespace {

TEST(ChannelFit, SeparatesSetupFromBandwidth) {
  // 60 us per move + 2 GB/s, as in the emulator: moves of 16 KiB to 4 MiB.
  ChannelSums sums;
  for (uint64_t kib : {16, 32, 64, 256, 1024, 4096, 16, 48, 512, 2048}) {
    const uint64_t bytes = kib * 1024;
    sums.add(bytes, 60'000 + bytes / 2);
  }
  const ChannelFit f = fit_channel(sums.totals());
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.setup_ns, 60'000, 1);
  EXPECT_NEAR(f.bw_gbps, 2.0, 1e-6);
  // A 64 KiB move runs at 0.7 GB/s, a 4 MiB one at 1.9: no one rate describes both.
  EXPECT_NEAR(65536 / (f.setup_ns + 65536 / f.bw_gbps), 0.706, 0.001);
  const ChannelTotals t = sums.totals();
  EXPECT_NEAR(channel_slowdown(t, 60'000, 2.0), 1.0, 1e-9);
  EXPECT_NEAR(channel_slowdown(t, 0, 4.0), t.ns / (t.kib * 1024 / 4.0), 1e-9);
}

TEST(ChannelFit, NeedsEnoughMovesOfDifferentSizes) {
  ChannelSums same;
  for (int i = 0; i < 20; ++i) same.add(1 << 20, 500'000);
  EXPECT_FALSE(fit_channel(same.totals()).valid);  // one size: setup and bandwidth cannot be told apart
  ChannelSums few;
  few.add(1 << 20, 500'000);
  few.add(4 << 20, 2'000'000);
  EXPECT_FALSE(fit_channel(few.totals()).valid);
  EXPECT_EQ(channel_slowdown(ChannelTotals{}, 1, 1), 0);
}

TEST(ChannelFit, NegativeInterceptIsClampedToABandwidthThroughTheOrigin) {
  ChannelSums sums;
  // Small moves faster per byte than large ones (0.4 against 0.5 ns per byte): the line through
  // them would cross below zero.
  for (uint64_t kib : {64, 128, 256, 512, 1024, 2048, 4096, 8192}) {
    const uint64_t bytes = kib * 1024;
    sums.add(bytes, kib >= 1024 ? bytes / 2 : bytes * 2 / 5);
  }
  const ChannelFit f = fit_channel(sums.totals());
  ASSERT_TRUE(f.valid);
  EXPECT_EQ(f.setup_ns, 0);
  EXPECT_GT(f.bw_gbps, 2.0);
  EXPECT_LT(f.bw_gbps, 2.1);  // the large moves carry the bytes
}

}  // namespace
}  // namespace sentinel::migrate
