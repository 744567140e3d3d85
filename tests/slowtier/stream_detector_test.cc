#include "stream_detector.h"

#include <gtest/gtest.h>

#include <random>

namespace sentinel::slowtier {
namespace {

// Lines of one 4 KiB page missed in order: the first `train` misses pay latency, the rest stream.
TEST(StreamDetector, AscendingPageTrainsThenStreams) {
  StreamDetector d;  // train 2
  const uint64_t first = 64 * 1000;
  int streamed = 0;
  for (uint64_t l = first; l < first + 64; ++l) streamed += d.on_miss(l) ? 1 : 0;
  EXPECT_EQ(streamed, 62);
}

TEST(StreamDetector, DescendingStreamsToo) {
  StreamDetector d;
  int streamed = 0;
  for (uint64_t l = 64 * 7 + 63; l >= 64 * 7; --l) streamed += d.on_miss(l) ? 1 : 0;
  EXPECT_EQ(streamed, 62);
}

// A stream never crosses a 4 KiB page: the next physical page of a virtual buffer is anywhere.
TEST(StreamDetector, EveryPageTrainsAgain) {
  StreamDetector d;
  int streamed = 0;
  for (uint64_t l = 0; l < 64 * 4; ++l) streamed += d.on_miss(l) ? 1 : 0;
  EXPECT_EQ(streamed, 4 * 62);
}

// Two interleaved streams (a copy's source and destination) are both followed.
TEST(StreamDetector, InterleavedStreamsAreFollowedApart) {
  StreamDetector d;
  int streamed = 0;
  for (uint64_t i = 0; i < 64; ++i) {
    streamed += d.on_miss(64 * 10 + i) ? 1 : 0;
    streamed += d.on_miss(64 * 900 + i) ? 1 : 0;
  }
  EXPECT_EQ(streamed, 2 * 62);
}

// Gaps up to the window continue a stream (a loop that skips lines); larger ones do not.
TEST(StreamDetector, WindowBoundsTheSkip) {
  StreamDetector d(StreamParams{16, 2, 4});
  int streamed = 0;
  for (uint64_t l = 0; l < 64; l += 4) streamed += d.on_miss(l) ? 1 : 0;
  EXPECT_EQ(streamed, 16 - 2);
  StreamDetector far(StreamParams{16, 2, 4});
  streamed = 0;
  for (uint64_t l = 64; l < 128; l += 5) streamed += far.on_miss(l) ? 1 : 0;
  EXPECT_EQ(streamed, 0);
}

// Random misses (a pointer chase) almost never look like a stream.
TEST(StreamDetector, RandomMissesDoNotStream) {
  StreamDetector d;
  std::mt19937_64 rng(7);
  int streamed = 0;
  for (int i = 0; i < 100000; ++i) streamed += d.on_miss(rng() % (1u << 22)) ? 1 : 0;
  EXPECT_LT(streamed, 10);
}

// More streams than trackers: the least recently used is dropped and has to train again.
TEST(StreamDetector, TrackersAreReplacedLeastRecentlyUsedFirst) {
  StreamDetector d(StreamParams{2, 2, 4});
  for (uint64_t i = 0; i < 3; ++i) {
    d.on_miss(64 * 1 + i);
    d.on_miss(64 * 2 + i);
  }
  EXPECT_TRUE(d.on_miss(64 * 1 + 3));
  d.on_miss(64 * 3);                    // replaces page 2's tracker (least recently used)
  EXPECT_TRUE(d.on_miss(64 * 1 + 4));   // page 1's stream goes on
  EXPECT_FALSE(d.on_miss(64 * 2 + 3));  // page 2 starts over
}

TEST(StreamDetector, NoTrackersIsTheLatencyOnlyModel) {
  StreamDetector d(StreamParams{0, 2, 4});
  for (uint64_t l = 0; l < 64; ++l) EXPECT_FALSE(d.on_miss(l));
}

}  // namespace
}  // namespace sentinel::slowtier
