#include "core/live_status.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace sentinel {
namespace {

struct TempPath {
  char path[64] = "/tmp/live-status-test-XXXXXX";
  TempPath() { ::close(::mkstemp(path)); }
  ~TempPath() { std::remove(path); }
};

TEST(LiveStatus, WhatTheWriterPublishesTheReaderReads) {
  TempPath f;
  LiveStatus s;
  EXPECT_FALSE(read_live_status(f.path, &s)) << "an empty file holds no status";
  LiveStatusWriter w;
  ASSERT_TRUE(w.open(f.path));
  EXPECT_FALSE(read_live_status(f.path, &s)) << "claimed but not yet written";
  LiveStatus in;
  std::strcpy(in.mode, "managed");
  std::strcpy(in.stage, "planning");
  in.steps = 7;
  in.dram_bytes = 123456;
  in.budget_bytes = 1 << 20;
  in.migrations = 3;
  w.publish(in);
  ASSERT_TRUE(read_live_status(f.path, &s));
  EXPECT_STREQ(s.mode, "managed");
  EXPECT_STREQ(s.stage, "planning");
  EXPECT_EQ(s.steps, 7u);
  EXPECT_EQ(s.dram_bytes, 123456u);
  EXPECT_EQ(s.budget_bytes, 1u << 20);
  EXPECT_EQ(s.migrations, 3u);
  w.close();
  EXPECT_TRUE(read_live_status(f.path, &s)) << "the file outlives the writer";
  EXPECT_FALSE(read_live_status("/nonexistent/status", &s));
}

// SENTINEL_STATUS names a file Sentinel writes into: a symlink planted at that name is not followed, and
// nothing but a regular file is resized or written.
TEST(LiveStatus, NeverWritesThroughASymlinkOrIntoAnythingButARegularFile) {
  TempPath victim;
  FILE* v = std::fopen(victim.path, "w");
  std::fputs("precious", v);
  std::fclose(v);
  const std::string link = std::string(victim.path) + ".link";
  ASSERT_EQ(::symlink(victim.path, link.c_str()), 0);
  LiveStatusWriter w;
  EXPECT_FALSE(w.open(link.c_str()));
  EXPECT_FALSE(w.open("/dev/null"));
  ::unlink(link.c_str());
  char text[16] = {};
  v = std::fopen(victim.path, "r");
  ASSERT_EQ(std::fread(text, 1, sizeof text, v), 8u);
  std::fclose(v);
  EXPECT_STREQ(text, "precious");
}

// A child that inherits the variable (fork, or a spawned program) must not write over its parent's status.
TEST(LiveStatus, OnlyTheFirstProcessToClaimTheFileWritesIt) {
  TempPath f;
  LiveStatusWriter w;
  ASSERT_TRUE(w.open(f.path));
  const pid_t child = ::fork();
  if (child == 0) {
    LiveStatusWriter other;
    ::_exit(other.open(f.path) ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a second process claimed the file";
}

TEST(LiveStatus, ReadsAreNeverTorn) {
  TempPath f;
  LiveStatusWriter w;
  ASSERT_TRUE(w.open(f.path));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    LiveStatus s;
    for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
      s.steps = s.dram_bytes = s.migrations = s.migrated_bytes = s.managed_steps = s.late_prefetches = i;
      w.publish(s);
    }
  });
  uint64_t reads = 0;
  for (int i = 0; i < 20000; ++i) {
    LiveStatus s;
    if (!read_live_status(f.path, &s)) continue;
    ++reads;
    ASSERT_EQ(s.steps, s.dram_bytes);
    ASSERT_EQ(s.steps, s.migrations);
    ASSERT_EQ(s.steps, s.migrated_bytes);
    ASSERT_EQ(s.steps, s.managed_steps);
    ASSERT_EQ(s.steps, s.late_prefetches);
  }
  stop = true;
  writer.join();
  EXPECT_GT(reads, 0u);
}

}  // namespace
}  // namespace sentinel
