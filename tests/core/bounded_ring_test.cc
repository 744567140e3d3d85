#include "core/bounded_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

namespace sentinel {
namespace {

struct Item {
  uint64_t seq;
  uint64_t check;  // ~seq: a torn copy shows as a mismatch
};

TEST(BoundedRing, HandsValuesOverInOrderAndDropsTheNewestWhenFull) {
  BoundedRing<Item, 4> ring;
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(ring.push(Item{i, ~i}));
  EXPECT_FALSE(ring.push(Item{4, ~uint64_t{4}}));
  EXPECT_EQ(ring.reserve(), (BoundedRing<Item, 4>::kNoTicket));
  EXPECT_EQ(ring.dropped(), 2u);
  Item out{};
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring.pop(&out));
    EXPECT_EQ(out.seq, i);
  }
  EXPECT_FALSE(ring.pop(&out));
  EXPECT_TRUE(ring.empty());
  EXPECT_TRUE(ring.push(Item{5, ~uint64_t{5}}));  // room again after the consumer moved on
  EXPECT_EQ(ring.pushed(), 5u);
}

TEST(BoundedRing, TheConsumerStopsAtAReservedPositionNotYetFilled) {
  BoundedRing<Item, 8> ring;
  const uint64_t first = ring.reserve();
  const uint64_t second = ring.reserve();
  ring.fill(second, Item{1, ~uint64_t{1}});
  Item out{};
  EXPECT_FALSE(ring.pop(&out));  // the first is reserved but not filled: order is kept
  EXPECT_FALSE(ring.empty());
  ring.fill(first, Item{0, ~uint64_t{0}});
  ASSERT_TRUE(ring.pop(&out));
  EXPECT_EQ(out.seq, 0u);
  ASSERT_TRUE(ring.pop(&out));
  EXPECT_EQ(out.seq, 1u);
  ring.fill(BoundedRing<Item, 8>::kNoTicket, Item{});  // a refused reservation: nothing happens
  EXPECT_FALSE(ring.pop(&out));
}

TEST(BoundedRing, PopIfLeavesAValueItDoesNotTakeFirst) {
  BoundedRing<Item, 8> ring;
  ring.push(Item{10, 0});
  ring.push(Item{20, 0});
  auto until = [](uint64_t limit) { return [limit](const Item& next) { return next.seq <= limit; }; };
  Item out{};
  EXPECT_FALSE(ring.pop_if(until(5), &out));
  ASSERT_TRUE(ring.pop_if(until(15), &out));
  EXPECT_EQ(out.seq, 10u);
  EXPECT_FALSE(ring.pop_if(until(15), &out));  // 20 stays first even though nothing else is there
  ASSERT_TRUE(ring.pop_if(until(25), &out));
  EXPECT_EQ(out.seq, 20u);
}

// One producer thread, one consumer thread, a small ring that is full most of the time: every value
// the producer got a position for arrives once, in order and whole; the others are counted as dropped.
TEST(BoundedRing, OneProducerOneConsumerLoseNothingUncounted) {
  constexpr uint64_t kValues = 200000;
  static BoundedRing<Item, 64> ring;
  uint64_t accepted = 0;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kValues; ++i) accepted += ring.push(Item{i, ~i}) ? 1 : 0;
  });
  uint64_t received = 0, last = 0, torn = 0, out_of_order = 0;
  bool producer_done = false;
  while (true) {
    Item out{};
    if (ring.pop(&out)) {
      torn += out.check != ~out.seq;
      out_of_order += received > 0 && out.seq <= last;
      last = out.seq;
      ++received;
      continue;
    }
    if (producer_done) break;
    if (ring.pushed() + ring.dropped() == kValues) {
      producer.join();
      producer_done = true;  // one more pass drains what is left
    }
  }
  EXPECT_EQ(received, accepted);
  EXPECT_EQ(accepted + ring.dropped(), kValues);
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(out_of_order, 0u);
}

}  // namespace
}  // namespace sentinel
