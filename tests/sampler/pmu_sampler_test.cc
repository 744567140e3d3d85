#include "sampler/pmu_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/scoped_perf_event_open.h"
#include "common/temp_dir.h"

namespace sentinel {
namespace {

// A fake sysfs tree: <root>/ibs_op/type holding `content` (or no ibs_op at all).
struct FakeSysfs {
  explicit FakeSysfs(const char* content) {
    if (content != nullptr) {
      mkdir((root + "/ibs_op").c_str(), 0755);
      std::ofstream(root + "/ibs_op/type") << content;
    }
  }
  testing::TempDir dir{"sentinel-sysfs"};
  const std::string& root = dir.path();
};

int count_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

TEST(Ibs, DetectsTheIbsOpPmuThroughSysfs) {
  uint32_t type = 0;
  int err = 0;
  std::string reason;
  FakeSysfs good("11\n");
  ASSERT_TRUE(read_ibs_op_type(good.root, &type, &err, &reason)) << reason;
  EXPECT_EQ(type, 11u);
  FakeSysfs none(nullptr);
  EXPECT_FALSE(read_ibs_op_type(none.root, &type, &err, &reason));
  EXPECT_EQ(err, ENOENT);
  EXPECT_NE(reason.find(none.root + "/ibs_op/type"), std::string::npos) << reason;
  FakeSysfs garbage("eleven\n");
  EXPECT_FALSE(read_ibs_op_type(garbage.root, &type, &err, &reason));
  EXPECT_EQ(err, EINVAL);
}

TEST(Ibs, AttributeAndPeriod) {
  EXPECT_EQ(ibs_op_period(0), 16u);
  EXPECT_EQ(ibs_op_period(16), 16u);
  EXPECT_EQ(ibs_op_period(10007), 10016u);
  FakeSysfs sys("11");
  PmuSamplerOptions opt;
  opt.kind = SamplerKind::kIbs;
  opt.sample_period = 10007;
  opt.sysfs_pmu_root = sys.root;
  perf_event_attr attr;
  const testing::FailingPerfEventOpen no_pmu(ENOENT);
  const Status r = build_pmu_attr(opt, &attr);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(attr.type, 11u);
  EXPECT_EQ(attr.sample_period, 10016u);
  EXPECT_NE(attr.sample_type & PERF_SAMPLE_ADDR, 0u);
  EXPECT_NE(attr.sample_type & PERF_SAMPLE_RAW, 0u);
  EXPECT_EQ(attr.precise_ip, 0u);
}

TEST(Ibs, DecodesTheLinearAddressFromRaw) {
  uint8_t raw[4 + 7 * 8] = {};
  const uint64_t data3 = (uint64_t{1} << 17) | 2;  // address valid, store
  const uint64_t lin = 0x7f1234567000;
  std::memcpy(raw + 4 + 4 * 8, &data3, 8);
  std::memcpy(raw + 4 + 5 * 8, &lin, 8);
  uint64_t addr = 0;
  int w = -1;
  ASSERT_TRUE(ibs_raw_access(raw, sizeof raw, &addr, &w));
  EXPECT_EQ(addr, lin);
  EXPECT_EQ(w, 1);
  EXPECT_FALSE(ibs_raw_access(raw, 4 + 5 * 8 + 7, &addr, &w));  // too short
  const uint64_t invalid = 1;                                     // load, address not valid
  std::memcpy(raw + 4 + 4 * 8, &invalid, 8);
  EXPECT_FALSE(ibs_raw_access(raw, sizeof raw, &addr, &w));
}

TEST(PmuProbe, ReportsTheErrnoThatRuledItOut) {
  FakeSysfs sys("11");
  PmuSamplerOptions opt;
  opt.kind = SamplerKind::kIbs;
  opt.sysfs_pmu_root = sys.root;
  for (int err : {ENOENT, ENODEV, EOPNOTSUPP, EACCES, EPERM}) {
    const testing::FailingPerfEventOpen failing(err);
    PmuSampler s;
    const Status r = s.probe(opt);
    EXPECT_FALSE(r.is_ok());
    EXPECT_EQ(r.sys_errno(), err);
    EXPECT_EQ(std::string(r.message()).rfind("perf_event_open: " + std::string(strerrorname_np(err)) + " (", 0), 0u)
        << r.message();
    const Status st = s.start(opt);
    EXPECT_FALSE(st.is_ok());
    EXPECT_EQ(st.sys_errno(), err);
    EXPECT_EQ(s.threads(), 0u);
  }
  EXPECT_NE(explain_perf_errno(EACCES).find("perf_event_paranoid is"), std::string::npos);
}

TEST(ChooseSampler, FallsBackToSoftwareAndSaysWhy) {
  FakeSysfs no_ibs(nullptr);
  const testing::FailingPerfEventOpen no_pmu(ENOENT);
  PmuSamplerOptions base;
  base.sysfs_pmu_root = no_ibs.root;
  SamplerChoice c = choose_sampler("auto", base);
  EXPECT_EQ(c.kind, SamplerKind::kSoftware);
  EXPECT_NE(c.reason.find("pebs unavailable: "), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("ibs unavailable: " + no_ibs.root + "/ibs_op/type"), std::string::npos) << c.reason;
  c = choose_sampler("ibs", base);
  EXPECT_EQ(c.kind, SamplerKind::kSoftware);
  EXPECT_NE(c.reason.find("falling back"), std::string::npos);
  EXPECT_EQ(choose_sampler("none", base).kind, SamplerKind::kNone);
  EXPECT_EQ(choose_sampler("software", base).kind, SamplerKind::kSoftware);
  c = choose_sampler("magic", base);
  EXPECT_EQ(c.kind, SamplerKind::kNone);
  EXPECT_NE(c.reason.find("unknown sampler"), std::string::npos);
}

TEST(ChooseSampler, PicksIbsWhenTheKernelAcceptsIt) {
  FakeSysfs sys("11");
  const testing::ScopedPerfEventOpen ibs_only([](perf_event_attr* attr, pid_t, int, int, unsigned long) {
    if (attr->type != 11) {
      errno = ENOENT;
      return -1;
    }
    return open("/dev/null", O_RDONLY | O_CLOEXEC);  // stands for an opened event; probe closes it
  });
  PmuSamplerOptions base;
  base.sysfs_pmu_root = sys.root;
  const SamplerChoice c = choose_sampler("auto", base);
  EXPECT_EQ(c.kind, SamplerKind::kIbs) << c.reason;
  EXPECT_NE(c.reason.find("pebs unavailable"), std::string::npos) << c.reason;
}

TEST(ChooseSampler, OnThisMachine) {
  const SamplerChoice c = choose_sampler("auto", PmuSamplerOptions{});
  std::printf("choose_sampler(auto): %s: %s\n", sampler_kind_name(c.kind), c.reason.c_str());
  EXPECT_NE(c.kind, SamplerKind::kNone);
  EXPECT_FALSE(c.reason.empty());
}

// The real kernel ring-buffer path, with a software perf event (page faults, sampled with their
// address) standing in for the PMU event: open per thread, mmap, drain, attach a later thread.
TEST(PmuSampler, ReadsRealPerfRingsPerThread) {
  PmuSamplerOptions opt;
  opt.has_encoding = true;
  opt.encoding.type = PERF_TYPE_SOFTWARE;
  opt.encoding.config = PERF_COUNT_SW_PAGE_FAULTS;
  opt.sample_period = 1;
  opt.precise_ip = 0;
  const int fds_before = count_fds();
  PmuSampler s;
  const Status r = s.start(opt);
  if (!r.is_ok()) GTEST_SKIP() << "software perf events unavailable: " << r.message();
  EXPECT_EQ(s.description(), "explicit encoding");  // what "PMU sampler started: " logs
  EXPECT_GE(s.threads(), 1u);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t len = 64 * page;
  char* mine = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  char* theirs = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  for (size_t i = 0; i < len; i += page) mine[i] = 1;

  std::atomic<pid_t> tid{0};
  std::atomic<bool> attached{false};
  std::thread t([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!attached) std::this_thread::yield();
    for (size_t i = 0; i < len; i += page) theirs[i] = 1;
  });
  while (tid == 0) std::this_thread::yield();
  const Status a = s.attach_thread(tid);
  ASSERT_TRUE(a.is_ok()) << a.message();
  const size_t threads_with_new = s.threads();
  attached = true;
  t.join();

  size_t in_mine = 0, in_theirs = 0, wrong_tid = 0;
  const auto self = static_cast<uint32_t>(syscall(SYS_gettid));
  s.drain([&](const PmuAccess& access) {
    const uint64_t addr = access.addr;
    const uint32_t from = access.tid;
    if (addr >= reinterpret_cast<uint64_t>(mine) && addr < reinterpret_cast<uint64_t>(mine) + len) {
      ++in_mine;
      wrong_tid += from != self;
    }
    if (addr >= reinterpret_cast<uint64_t>(theirs) && addr < reinterpret_cast<uint64_t>(theirs) + len) {
      ++in_theirs;
      wrong_tid += from != static_cast<uint32_t>(tid.load());
    }
  });
  EXPECT_EQ(in_mine, 64u);
  EXPECT_EQ(in_theirs, 64u);
  EXPECT_EQ(wrong_tid, 0u);
  EXPECT_EQ(s.threads(), threads_with_new - 1);  // the exited thread's ring was closed
  EXPECT_EQ(s.stats().corrupt, 0u);
  s.stop();
  EXPECT_EQ(s.threads(), 0u);
  EXPECT_EQ(count_fds(), fds_before);
  munmap(mine, len);
  munmap(theirs, len);
}

// Sample times are on CLOCK_MONOTONIC (use_clockid), the clock of the runtime's event times, so the
// profiler can put a sample in the phase of its access (profile/sample_attribution.h).
TEST(PmuSampler, SampleTimesAreOnTheMonotonicClock) {
  PmuSamplerOptions opt;
  opt.has_encoding = true;
  opt.encoding.type = PERF_TYPE_SOFTWARE;
  opt.encoding.config = PERF_COUNT_SW_PAGE_FAULTS;
  opt.sample_period = 1;
  opt.precise_ip = 0;
  PmuSampler s;
  const Status r = s.start(opt);
  if (!r.is_ok()) GTEST_SKIP() << "software perf events unavailable: " << r.message();
  auto mono = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t len = 16 * page;
  char* mem = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  const uint64_t before = mono();
  for (size_t i = 0; i < len; i += page) mem[i] = 1;
  const uint64_t after = mono();
  size_t in_window = 0, seen = 0;
  s.drain([&](const PmuAccess& a) {
    if (a.addr < reinterpret_cast<uint64_t>(mem) || a.addr >= reinterpret_cast<uint64_t>(mem) + len) return;
    ++seen;
    in_window += a.monotonic_ns >= before && a.monotonic_ns <= after;
  });
  EXPECT_EQ(seen, 16u);
  EXPECT_EQ(in_window, seen);
  s.stop();
  munmap(mem, len);
}

TEST(PmuSampler, HardwarePebsOrIbsWhenPresent) {
  for (SamplerKind kind : {SamplerKind::kPebs, SamplerKind::kIbs}) {
    PmuSamplerOptions opt;
    opt.kind = kind;
    opt.sample_period = 1009;
    PmuSampler s;
    const Status r = s.start(opt);
    if (!r.is_ok()) {
      std::printf("%s unavailable here: %s\n", sampler_kind_name(kind), r.message());
      continue;
    }
    std::vector<char> buf(64 << 20, 1);
    uint64_t sum = 0;
    for (int rep = 0; rep < 4; ++rep) {
      for (size_t i = 0; i < buf.size(); i += 4096 + 64) sum += buf[i];
    }
    size_t n = s.drain([](const PmuAccess&) {});
    EXPECT_GT(n + s.stats().lost, 0u) << sum;
    s.stop();
    return;
  }
  GTEST_SKIP() << "no PMU sampler can run on this machine (see the messages above)";
}

}  // namespace
}  // namespace sentinel
