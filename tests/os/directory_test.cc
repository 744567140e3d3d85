// os::list_directory and os::for_each_thread: the entries and threads they report, and that a listing
// fails through the os table's open_read like a file read does.
#include "os/directory.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/temp_dir.h"
#include "os/fault_injector.h"

namespace sentinel {
namespace {

TEST(ListDirectory, VisitsEveryEntryButDotAndDotDot) {
  testing::TempDir dir("sentinel-listing");
  std::vector<std::string> made;
  for (int i = 0; i < 300; ++i) {  // more than one getdents64 buffer holds
    made.push_back("entry-with-a-long-name-" + std::to_string(i));
    std::ofstream(dir.path() + "/" + made.back()) << i;
  }
  mkdir((dir.path() + "/sub").c_str(), 0700);
  made.push_back("sub");
  std::vector<std::string> seen;
  ASSERT_EQ(os::list_directory(dir.path().c_str(), [&](const char* name) { seen.emplace_back(name); }), 0);
  std::sort(made.begin(), made.end());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, made);
}

TEST(ListDirectory, AMissingDirectoryIsMinusOneWithErrno) {
  int visits = 0;
  errno = 0;
  EXPECT_EQ(os::list_directory("/nonexistent-sentinel-dir", [&](const char*) { ++visits; }), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(visits, 0);
  testing::TempDir dir("sentinel-listing");
  const std::string file = dir.path() + "/plain";
  std::ofstream(file) << "x";
  EXPECT_EQ(os::list_directory(file.c_str(), [&](const char*) { ++visits; }), -1);
  EXPECT_EQ(errno, ENOTDIR);
  EXPECT_EQ(visits, 0);
}

TEST(ListDirectory, OpensThroughTheOsTable) {
  os::FaultConfig c;
  c.seed = 3;
  c.rate = 1.0;
  c.ops = os::op_bit(os::Op::kOpenRead);
  os::ScopedFaultInjection inject(c);
  ASSERT_TRUE(inject.started());
  int visits = 0;
  EXPECT_EQ(os::list_directory("/proc/self", [&](const char*) { ++visits; }), -1);
  EXPECT_EQ(visits, 0);
  EXPECT_GT(os::fault_counts().failed[static_cast<int>(os::Op::kOpenRead)], 0u);
}

TEST(ForEachThread, SeesThisThreadAndOneStartedLater) {
  const auto self = static_cast<pid_t>(syscall(SYS_gettid));
  std::atomic<pid_t> other{0};
  std::atomic<bool> done{false};
  std::thread t([&] {
    other = static_cast<pid_t>(syscall(SYS_gettid));
    while (!done) std::this_thread::yield();
  });
  while (other == 0) std::this_thread::yield();
  std::vector<pid_t> tids;
  EXPECT_EQ(os::for_each_thread([&](pid_t tid) { tids.push_back(tid); }), 0);
  done = true;
  t.join();
  EXPECT_NE(std::find(tids.begin(), tids.end(), self), tids.end());
  EXPECT_NE(std::find(tids.begin(), tids.end(), other.load()), tids.end());
  EXPECT_EQ(std::count_if(tids.begin(), tids.end(), [](pid_t tid) { return tid <= 0; }), 0);
}

}  // namespace
}  // namespace sentinel
