#include "virtual_clock.h"

#include <gtest/gtest.h>

#include "node_map.h"

namespace sentinel::slowtier {
namespace {

ClockParams params() {
  ClockParams p;
  p.cpi = 1.0;
  p.freq_ghz = 2.0;
  p.mlp = 4.0;
  p.line_bytes = 64;
  p.node[0] = NodeTiming{80, 64, 32};
  p.node[1] = NodeTiming{320, 16, 8};
  return p;
}

TEST(VirtualClock, ComputeOnlyEpochIsInstructionsTimesCpiOverFrequency) {
  EpochCounts c;
  c.instructions = 1000;
  c.cycles = 1000;
  EXPECT_DOUBLE_EQ(epoch_ns(c, params()), 500.0);
}

TEST(VirtualClock, LatencyBoundEpochAddsMissLatencyOverMlp) {
  EpochCounts c;
  c.instructions = 1000;
  c.cycles = 1000;
  c.misses[0] = 4;
  c.misses[1] = 4;
  EXPECT_DOUBLE_EQ(epoch_ns(c, params()), 500.0 + 4 * 80 / 4.0 + 4 * 320 / 4.0);
}

TEST(VirtualClock, BandwidthBoundEpochIsTheSlowestNodesTransfer) {
  EpochCounts c;
  c.instructions = 10;
  c.cycles = 10;
  c.misses[1] = 100;       // 6400 B at 16 B/ns = 400 ns; latency term 100*320/4 = 8000 ns
  c.writebacks[1] = 1000;  // 64000 B at 8 B/ns = 8000 ns
  double transfer = 6400 / 16.0 + 64000 / 8.0;
  double latency = 5 + 100 * 320 / 4.0;
  EXPECT_DOUBLE_EQ(epoch_ns(c, params()), std::max(transfer, latency));
  c.writebacks[1] = 10000;
  EXPECT_DOUBLE_EQ(epoch_ns(c, params()), 6400 / 16.0 + 640000 / 8.0);
}

// A streamed miss (stream_detector.h) costs bandwidth, not latency: a stream of them is bound by
// the node's read bandwidth or by the core's work, whichever is slower.
TEST(VirtualClock, StreamedMissesCostBandwidthNotLatency) {
  EpochCounts c;
  c.instructions = 1000;
  c.cycles = 1000;
  c.misses[1] = 100;
  c.streamed[1] = 90;
  // compute 500 ns + the 10 latency-bound misses; transfer of all 100 lines: 6400 B at 16 B/ns
  EXPECT_DOUBLE_EQ(epoch_ns(c, params()), std::max(500.0 + 10 * 320 / 4.0, 6400 / 16.0));
  c.misses[1] = c.streamed[1] = 1000;  // 64000 B at 16 B/ns = 4000 ns: bandwidth-bound
  EXPECT_DOUBLE_EQ(epoch_ns(c, params()), 4000.0);
}

// TCG runs a rep movs/stos one element at a time; a core with fast strings moves tens of bytes per
// cycle, so elements are charged by their bytes (or as instructions when that is turned off).
TEST(VirtualClock, StringElementsAreChargedByTheirBytes) {
  ClockParams p = params();  // 2 GHz
  p.string_bytes_per_cycle = 32;
  VirtualClock clock(p);
  clock.add_string_elements(4096, 1);  // rep stosb of a page: 128 cycles
  clock.add_instructions(100);         // 100 cycles at cpi 1
  EXPECT_EQ(clock.open_instructions(), 4196u);
  clock.close_epoch();
  EXPECT_DOUBLE_EQ(clock.now_ns(), (128 + 100) / 2.0);
  p.string_bytes_per_cycle = 0;
  VirtualClock plain(p);
  plain.add_string_elements(512, 8);
  plain.close_epoch();
  EXPECT_DOUBLE_EQ(plain.now_ns(), 512 / 2.0);
}

TEST(VirtualClock, SlowNodeMissesCostMoreThanFastOnes) {
  EpochCounts fast, slow;
  fast.instructions = slow.instructions = 5000;
  fast.cycles = slow.cycles = 5000;
  fast.misses[0] = slow.misses[1] = 500;
  EXPECT_GT(epoch_ns(slow, params()), epoch_ns(fast, params()));
}

TEST(VirtualClock, ClosingEpochsAccumulatesAndCatchUpNeverGoesBack) {
  VirtualClock clock(params());
  clock.add_instructions(2000);
  clock.add_miss(1);
  clock.close_epoch();
  double t1 = clock.now_ns();
  EXPECT_DOUBLE_EQ(t1, 1000 + 80.0);
  EXPECT_EQ(clock.open_instructions(), 0u);
  clock.close_epoch();  // empty epoch: no time
  EXPECT_DOUBLE_EQ(clock.now_ns(), t1);
  clock.advance_to(t1 - 10);
  EXPECT_DOUBLE_EQ(clock.now_ns(), t1);
  clock.advance_to(t1 + 10);
  EXPECT_DOUBLE_EQ(clock.now_ns(), t1 + 10);
}

TEST(NodeMap, Qemu72LayoutPutsNode1AtTwiceNode0) {
  NodeMap m = NodeMap::qemu72_layout(2048ull << 20, 1024ull << 20);
  EXPECT_EQ(m.node_of(0), Node::kFast);
  EXPECT_EQ(m.node_of((2048ull << 20) - 1), Node::kFast);
  EXPECT_EQ(m.node_of(2048ull << 20), Node::kOther);  // the gap between the two
  EXPECT_EQ(m.node_of(4096ull << 20), Node::kSlow);
  EXPECT_EQ(m.backend_offset((4096ull << 20) + 4096), 4096u);
  EXPECT_EQ(m.node_of((5120ull << 20) - 1), Node::kSlow);
  EXPECT_EQ(m.node_of(5120ull << 20), Node::kOther);
}

// Node 1 as dax kmem memory: the NVDIMM backend's block follows node 0's directly (no second mapping
// into the RAM container), and the RAM blocks after it (firmware) are nobody's.
TEST(NodeMap, Qemu72KmemLayoutPutsTheNvdimmRightAfterNode0) {
  const uint64_t n0 = 2048ull << 20, nv = (2048ull + 128) << 20;
  NodeMap m = NodeMap::qemu72_kmem_layout(n0, nv);
  EXPECT_EQ(m.node1_base(), n0);
  EXPECT_EQ(m.node_of(n0 - 1), Node::kFast);
  EXPECT_EQ(m.node_of(n0), Node::kSlow);
  EXPECT_EQ(m.backend_offset(n0), 0u);
  EXPECT_EQ(m.backend_offset(n0 + (128ull << 20) + 8192), (128ull << 20) + 8192);
  EXPECT_EQ(m.node_of(n0 + nv - 1), Node::kSlow);
  EXPECT_EQ(m.node_of(n0 + nv), Node::kOther);
  EXPECT_EQ(m.node_of(2 * n0 + nv), Node::kOther);
  // The plain layout's node 1 would start where this one is already half through.
  EXPECT_NE(NodeMap::qemu72_layout(n0, nv).node1_base(), m.node1_base());
}

}  // namespace
}  // namespace sentinel::slowtier
