// Runs with libsentinel.so preloaded (see CMakeLists.txt). Every test first checks that Sentinel is
// really active, so a run without the preload fails instead of passing trivially.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sentinel/sentinel.h"

namespace {

constexpr size_t kLarge = 1 << 20;  // well above the default 64 KiB threshold
constexpr size_t kSmall = 100;
// Under AddressSanitizer (scripts/sanitizers.sh) the system allocator behind Sentinel is ASan's, whose
// aligned_alloc holds to C11's rule (size a multiple of the alignment) that glibc's does not enforce.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kStrictAlignedAlloc = true;
#else
constexpr bool kStrictAlignedAlloc = false;
#endif

struct Api {
  int (*active)() = nullptr;
  int (*counters)(sentinel_counters*) = nullptr;
  void (*step_begin)() = nullptr;
};

Api api() {
  Api a;
  a.active = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "sentinel_active"));
  a.counters = reinterpret_cast<int (*)(sentinel_counters*)>(dlsym(RTLD_DEFAULT, "sentinel_get_counters"));
  a.step_begin = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "sentinel_step_begin"));
  return a;
}

sentinel_counters counters() {
  sentinel_counters c{};
  api().counters(&c);
  return c;
}

class Preload : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(api().active, nullptr) << "libsentinel.so is not preloaded";
    ASSERT_EQ(api().active(), 1) << "Sentinel is loaded but not active";
  }
};

void fill(void* p, size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 31 + seed);
}
bool check(const void* p, size_t n, unsigned seed) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != static_cast<unsigned char>(i * 31 + seed)) return false;
  return true;
}

// Runs fn in a forked child and returns its exit status (or 128 + signal).
template <typename Fn>
int in_child(Fn fn) {
  const pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(Preload, LargeAllocationsBecomeObjectsAndSmallOnesDoNot) {
  const uint64_t before = counters().objects_tracked;
  void* big = malloc(kLarge);
  void* small = malloc(kSmall);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 4096, 0u);
  EXPECT_EQ(counters().objects_tracked, before + 1);
  EXPECT_GE(malloc_usable_size(big), kLarge);
  EXPECT_GE(malloc_usable_size(small), kSmall);
  free(big);
  free(small);
}

TEST_F(Preload, FirstOperationOfAThreadIsFreeOrRealloc) {
  void* from_main_large = malloc(kLarge);
  void* from_main_small = malloc(kSmall);
  void* to_grow = malloc(kSmall);
  std::memset(to_grow, 7, kSmall);
  std::thread t([&] {
    free(from_main_large);  // this thread's first allocator call is a free of a foreign object
    free(from_main_small);
    void* grown = realloc(to_grow, kLarge);
    ASSERT_NE(grown, nullptr);
    EXPECT_EQ(static_cast<unsigned char*>(grown)[kSmall - 1], 7);
    free(grown);
  });
  t.join();
  std::thread t2([] {
    void* p = realloc(nullptr, 0);  // a thread's first call: realloc as malloc(0)
    EXPECT_NE(p, nullptr);
    free(p);
  });
  t2.join();
}

TEST_F(Preload, MallocZeroGivesAUniqueFreeablePointer) {
  void* a = malloc(0);
  void* b = malloc(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  free(a);
  free(b);
  free(nullptr);
}

TEST_F(Preload, CallocOverflowGivesNullAndEnomem) {
  errno = 0;
  EXPECT_EQ(calloc(SIZE_MAX / 2, 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(reallocarray(nullptr, SIZE_MAX / 4, 8), nullptr);
  EXPECT_EQ(errno, ENOMEM);
}

TEST_F(Preload, CallocOfARecycledExtentIsZero) {
  for (int round = 0; round < 3; ++round) {
    void* dirty = malloc(3 * kLarge);
    std::memset(dirty, 0xff, 3 * kLarge);
    free(dirty);
    auto* clean = static_cast<unsigned char*>(calloc(3, kLarge));
    ASSERT_NE(clean, nullptr);
    for (size_t i = 0; i < 3 * kLarge; ++i) ASSERT_EQ(clean[i], 0) << i;
    free(clean);
  }
}

TEST_F(Preload, EveryAlignedVariant) {
  void* p = nullptr;
  EXPECT_EQ(posix_memalign(&p, 3, kLarge), EINVAL);
  EXPECT_EQ(posix_memalign(&p, 4, kLarge), EINVAL);  // not a multiple of sizeof(void*)
  EXPECT_EQ(posix_memalign(&p, 0, kLarge), EINVAL);
  for (size_t align : {size_t{8}, size_t{64}, size_t{4096}, size_t{65536}, size_t{1} << 21, size_t{1} << 23}) {
    for (size_t size : {kSmall, kLarge, size_t{5} << 20}) {
      ASSERT_EQ(posix_memalign(&p, align, size), 0) << align << " " << size;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
      fill(p, size, 1);
      EXPECT_TRUE(check(p, size, 1));
      free(p);
      p = aligned_alloc(align, kStrictAlignedAlloc ? (size + align - 1) / align * align : size);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
      free(p);
      p = memalign(align, size);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
      free(p);
    }
  }
  const long page = sysconf(_SC_PAGESIZE);
  for (size_t size : {size_t{0}, kSmall, kLarge}) {
    p = valloc(size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % page, 0u);
    free(p);
    p = pvalloc(size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % page, 0u);
    EXPECT_GE(malloc_usable_size(p), size);
    free(p);
  }
}

TEST_F(Preload, ReallocAcrossTheThresholdKeepsContent) {
  size_t size = 1000;
  void* p = malloc(size);
  fill(p, size, 9);
  // Grow from small to large and far beyond, then shrink back below the threshold.
  for (size_t next : {size_t{60000}, size_t{70000}, size_t{200000}, size_t{210000}, size_t{3} << 20,
                      size_t{9} << 20, size_t{150000}, size_t{65536}, size_t{4000}, size_t{100}}) {
    void* q = realloc(p, next);
    ASSERT_NE(q, nullptr) << next;
    const size_t kept = next < size ? next : size;
    ASSERT_TRUE(check(q, kept, 9)) << size << " -> " << next;
    fill(q, next, 9);
    p = q;
    size = next;
  }
  free(p);
  EXPECT_EQ(realloc(malloc(kLarge), 0), nullptr);  // glibc: realloc(p, 0) frees p
}

TEST_F(Preload, ManyThreadsWithCrossThreadFrees) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 3000;
  std::vector<std::atomic<void*>> mailbox(kThreads);
  for (auto& m : mailbox) m.store(nullptr);
  std::atomic<int> corrupt{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const size_t size = (i % 3 == 0) ? kSmall * (1 + i % 50) : 65536 + (i % 17) * 9000;
        void* p = malloc(size);
        fill(p, 64, static_cast<unsigned>(t));
        std::memcpy(static_cast<char*>(p) + size - sizeof size, &size, sizeof size);
        // Hand it to the next thread, free what the previous thread handed us.
        void* theirs = mailbox[(t + 1) % kThreads].exchange(p);
        if (theirs != nullptr) {
          free(theirs);  // content was written by another thread: only the free matters here
        }
        void* mine_back = mailbox[t].exchange(nullptr);
        if (mine_back != nullptr) {
          if (!check(mine_back, 64, static_cast<unsigned>((t + kThreads - 1) % kThreads)) &&
              !check(mine_back, 64, static_cast<unsigned>(t))) {
            // Accept any thread's pattern: only detect garbage.
            bool any = false;
            for (int s = 0; s < kThreads; ++s) any |= check(mine_back, 64, static_cast<unsigned>(s));
            if (!any) ++corrupt;
          }
          free(mine_back);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& m : mailbox) free(m.load());
  EXPECT_EQ(corrupt.load(), 0);
}

TEST_F(Preload, ForkWhileAnotherThreadAllocates) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) {
      void* p = malloc(65536 + 4096);
      void* q = malloc(kSmall);
      free(p);
      free(q);
    }
  });
  for (int i = 0; i < 20; ++i) {
    const int status = in_child([] {
      // The child has only this thread; every lock must be usable.
      for (int k = 0; k < 100; ++k) {
        void* p = malloc(kLarge);
        fill(p, kLarge, 3);
        if (!check(p, kLarge, 3)) return 1;
        free(p);
        free(malloc(kSmall));
      }
      return 0;
    });
    ASSERT_EQ(status, 0) << "fork " << i;
  }
  stop = true;
  busy.join();
}

TEST_F(Preload, DlopenAfterStart) {
  void* h = dlopen(HAZARD_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto buffer = reinterpret_cast<void* (*)()>(dlsym(h, "plugin_buffer"));
  auto make = reinterpret_cast<void* (*)(size_t)>(dlsym(h, "plugin_make"));
  auto release = reinterpret_cast<void (*)(void*)>(dlsym(h, "plugin_free"));
  ASSERT_TRUE(buffer && make && release);
  EXPECT_EQ(static_cast<unsigned char*>(buffer())[12345], 0x5a);
  void* p = make(kLarge);
  free(p);  // allocated in the plugin, freed here
  void* q = malloc(kLarge);
  release(q);  // and the other way round
  dlclose(h);
}

TEST_F(Preload, ExitTimeFreesAndAllocations) {
  const int status = in_child([] {
    execl(EXIT_TIME_FREES, EXIT_TIME_FREES, static_cast<char*>(nullptr));
    return 127;
  });
  EXPECT_EQ(status, 0);
}

sigjmp_buf g_jump;
volatile sig_atomic_t g_handled = 0;
void program_segv_handler(int, siginfo_t* info, void*) {
  g_handled = 1;
  (void)info;
  siglongjmp(g_jump, 1);
}

TEST_F(Preload, ProgramsOwnSigsegvHandlerStillGetsItsFaults) {
  struct sigaction sa {};
  sa.sa_sigaction = program_segv_handler;
  sa.sa_flags = SA_SIGINFO;
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGSEGV, &sa, &old), 0);
  void* guard = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(guard, MAP_FAILED);
  void* big = malloc(kLarge);  // objects keep working around the fault
  if (sigsetjmp(g_jump, 1) == 0) {
    *static_cast<volatile int*>(guard) = 1;
    FAIL() << "no fault";
  }
  EXPECT_EQ(g_handled, 1);
  fill(big, kLarge, 4);
  EXPECT_TRUE(check(big, kLarge, 4));
  free(big);
  munmap(guard, 4096);
  sigaction(SIGSEGV, &old, nullptr);
  // Without a handler a stray fault still kills the program with SIGSEGV, as without Sentinel.
  // (A PROT_NONE page, not a null pointer: the sanitizer stage's UBSan would stop at a null store first.)
  EXPECT_EQ(in_child([] {
              signal(SIGSEGV, SIG_DFL);
              void* none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
              *static_cast<volatile int*>(none) = 1;
              return 0;
            }),
            128 + SIGSEGV);
}

// A child forked without exec (a DataLoader worker) runs as a pass-through allocator: its large
// allocations are not objects, it can free and realloc the objects it inherited, and the parent's
// counters do not change.
TEST_F(Preload, ForkedChildRunsAsPassThrough) {
  void* inherited = malloc(kLarge);
  void* grown = malloc(kLarge);
  fill(inherited, kLarge, 5);
  fill(grown, kLarge, 6);
  const sentinel_counters parent_before = counters();
  const int status = in_child([&] {
    const uint64_t tracked = counters().objects_tracked;
    void* p = malloc(kLarge);
    fill(p, kLarge, 7);
    if (!check(p, kLarge, 7) || counters().objects_tracked != tracked) return 1;
    free(p);
    if (!check(inherited, kLarge, 5)) return 2;
    free(inherited);
    void* q = realloc(grown, 2 * kLarge);
    if (q == nullptr || !check(q, kLarge, 6)) return 3;
    free(q);
    return 0;
  });
  EXPECT_EQ(status, 0);
  const sentinel_counters parent_after = counters();
  EXPECT_EQ(parent_after.objects_tracked, parent_before.objects_tracked);
  EXPECT_TRUE(check(inherited, kLarge, 5));
  free(inherited);
  free(grown);
  EXPECT_EQ(counters().objects_tracked, parent_before.objects_tracked);
  free(malloc(kLarge));  // the parent still makes objects
  EXPECT_EQ(counters().objects_tracked, parent_before.objects_tracked + 1);
}

// Runs in the test process itself (ctest runs every test in a process of its own): a forked child
// would be a pass-through allocator.
TEST_F(Preload, ExplicitStepMarksAreCounted) {
  const int status = [] {
    auto a = api();
    const uint64_t before = counters().steps_detected;
    for (int step = 0; step < 5; ++step) {
      a.step_begin();
      std::vector<void*> held;
      for (int k = 0; k < 6; ++k) held.push_back(malloc(kLarge + k * 4096));
      for (void* p : held) free(p);
    }
    a.step_begin();
    free(malloc(kLarge));  // opens a sixth step, closing the fifth
    const sentinel_counters c = counters();
    if (c.steps_detected - before != 5 || c.step_period != 6) {
      std::fprintf(stderr, "steps %llu (before %llu) period %u\n", static_cast<unsigned long long>(c.steps_detected - before), static_cast<unsigned long long>(before),
                   c.step_period);
      return 1;
    }
    return 0;
  }();
  EXPECT_EQ(status, 0);
}

std::string run_with_env(const char* env_assignment, int* status) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    putenv(const_cast<char*>(env_assignment));
    setenv("LD_PRELOAD", SENTINEL_LIB, 1);
    execl(EXIT_TIME_FREES, EXIT_TIME_FREES, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipefd[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  waitpid(pid, status, 0);
  return out;
}

TEST_F(Preload, BadConfigurationGivesOneLineAndPassThrough) {
  int status = 0;
  const std::string err = run_with_env("SENTINEL_MIN_OBJECT=tiny", &status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);  // the program ran to its end
  EXPECT_NE(err.find("SENTINEL_MIN_OBJECT='tiny'"), std::string::npos) << err;
  EXPECT_NE(err.find("accepted"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
