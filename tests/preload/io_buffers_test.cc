// io_buffers.cc under libsentinel.so in profile mode with the software sampler: system calls that copy
// into and out of objects (read, write, send, recv, sendmsg, recvmsg, readv, writev) must succeed and
// move the data unchanged while the sampler protects windows in those objects. The run must really
// have met protected windows (protected_at_call > 0) and sampled (samples > 0), or it proves nothing.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "pattern_score.h"

namespace sentinel {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The number after `key` in `text` (-1 if absent).
long number_after(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::atol(text.c_str() + at + key.size());
}

TEST(IoBuffers, CallsIntoProtectedObjectsSucceedAndCountAsSamples) {
  const std::string dir = ::testing::TempDir() + "/io_buffers_" + std::to_string(getpid());
  const std::string stats = dir + ".stats", profile = dir + ".profile";
  const e2e::RunResult r = e2e::run_program(
      {IO_BUFFERS, "6"},
      {std::string("LD_PRELOAD=") + SENTINEL_LIB, "SENTINEL_MODE=profile", "SENTINEL_SAMPLER=software",
       "SENTINEL_WARMUP_STEPS=1", "SENTINEL_PROFILE_STEPS=3", "SENTINEL_STATS=" + stats,
       "SENTINEL_PROFILE_OUT=" + profile, "SENTINEL_LOG=warn"});
  const std::string stats_text = read_file(stats);
  unlink(stats.c_str());
  unlink(profile.c_str());
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out << r.err;
  EXPECT_EQ(number_after(r.out, "failures "), 0) << r.out << r.err;
  EXPECT_EQ(number_after(r.out, "calls "), 6 * 8) << r.out;
  EXPECT_GT(number_after(r.out, "protected_at_call "), 0) << "no call met a protected window: the test proves nothing\n"
                                                          << r.out << r.err;
  EXPECT_NE(stats_text.find("\"sampler\": \"software\""), std::string::npos) << stats_text;
  EXPECT_GT(number_after(stats_text, "\"samples\": "), 0) << stats_text;
}

}  // namespace
}  // namespace sentinel
