#include "core/deferred_log.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace sentinel {
namespace {

TEST(DeferredLog, KeepsOrderTruncatesAndCountsDrops) {
  static DeferredLog log;
  log.push(LogLevel::kInfo, "first");
  log.push(LogLevel::kWarn, std::string(500, 'x').c_str());
  std::vector<std::pair<LogLevel, std::string>> got;
  log.drain([&](LogLevel l, const char* t) { got.emplace_back(l, t); });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].second, "first");
  EXPECT_EQ(got[1].first, LogLevel::kWarn);
  EXPECT_EQ(got[1].second.size(), DeferredLog::kMessageBytes - 1);
  for (uint32_t i = 0; i < DeferredLog::kCapacity + 5; ++i) log.push(LogLevel::kInfo, "m");
  EXPECT_EQ(log.dropped(), 5u);
  got.clear();
  log.drain([&](LogLevel l, const char* t) { got.emplace_back(l, t); });
  EXPECT_EQ(got.size(), DeferredLog::kCapacity);
}

TEST(DeferredLog, ConcurrentPushAndDrainLoseNothingUnlessFull) {
  static DeferredLog log;
  std::atomic<int> drained{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) log.drain([&](LogLevel, const char*) { ++drained; });
    log.drain([&](LogLevel, const char*) { ++drained; });
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t)
    writers.emplace_back([] {
      for (int i = 0; i < 1000; ++i) log.push(LogLevel::kInfo, "hello");
    });
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(drained.load() + static_cast<int>(log.dropped()), 3000);
}

}  // namespace
}  // namespace sentinel
