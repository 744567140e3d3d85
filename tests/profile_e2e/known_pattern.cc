// A program with a known memory access pattern, for checking what Sentinel's profiler records.
//
// Every "step" allocates the same objects (>= 64 KiB) in the same order; these allocations are the
// step's events, so phase e is the time from the allocation of the object born at event e to the next
// allocation. Between events the program does real memory work (streaming reads and writes over whole
// objects) on exactly the objects the schedule below names for that phase, and nothing else touches
// objects. Persistent objects are allocated before the first step and never freed; one of them and one
// step-local object are never touched (cold). One object is born late in the step and freed early in
// the next (its lifetime wraps).
//
// --print-truth prints the schedule (objects with size, lifetime, and the phases each is touched in)
// and exits; pattern_score.h parses it. Every object has a distinct size, which is how a profile's
// objects are matched to the truth.
//
// stdout carries only a checksum per step and a final one: deterministic, the same with or without
// Sentinel. Diagnostics go to stderr as "kp: ..." lines (step clock as Sentinel reports it, pages of the
// program's objects that are PROT_NONE in /proc/self/maps, SIGSEGV handler counts).
//
// Options: --steps N, --copies R (R interleaved copies of the pattern: period 8R), --work-kb K (memory
// traffic per phase), --settle-us U (work on a small non-object buffer at the start of each phase,
// so the profiler has armed before objects are touched), --mark (sentinel_step_begin before every
// step), --own-segv before|during (install a SIGSEGV handler before the first step, or at phase 2 of
// step --segv-step; from then on one deliberate fault per phase on a private guard page),
// --crash-step S (write to an unmapped address in phase 3 of step S), --sync-arm-ms M (after the
// settle, wait up to M ms until the object born at this phase's event has a protected page, i.e. the
// software sampler has armed the phase: this takes the profiler's phase attribution latency out of
// the measurement; it waits only while some object page is protected), --irregular P (in about P% of the
// steps, chosen by a fixed hash of the step number, one extra short-lived object is allocated after phase
// 3's event: the step's allocation sequence then differs from the plan's, as the steps of a program with
// variable sequence lengths do).
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "sentinel/sentinel.h"

namespace {

constexpr int kPeriod = 8;  // events per copy of the pattern
constexpr int kMaxCopies = 8;

struct ObjectSpec {
  const char* name;
  int kib;          // size in KiB for copy 0; copy r adds 100 * r KiB (sizes stay distinct)
  bool persistent;
  int birth, death;  // phases of one copy; death >= kPeriod wraps into the next step
  bool free_at_end;  // freed after the phase's work (its last use is in its death phase)
};

// Indices into kObjects.
enum { W0, W1, W2, C0, X, A1, A2, T3, G2, G1, K6, Y, kNumObjects };
constexpr ObjectSpec kObjects[kNumObjects] = {
    {"W0", 256, true, 0, kPeriod - 1, false},  {"W1", 260, true, 0, kPeriod - 1, false},
    {"W2", 264, true, 0, kPeriod - 1, false},  {"C0", 268, true, 0, kPeriod - 1, false},
    {"X", 320, false, 0, 5, true},             {"A1", 324, false, 1, 5, false},
    {"A2", 328, false, 2, 4, false},           {"T3", 332, false, 3, 3, true},
    {"G2", 336, false, 4, 6, false},           {"G1", 340, false, 5, 6, true},
    {"K6", 344, false, 6, 7, false},           {"Y", 348, false, 7, kPeriod + 1, false},
};

enum Mode { kRead, kWrite, kReadWrite };
struct Use {
  int phase, object;
  Mode mode;
};
// A miniature forward/backward pass: X is the input, A1/A2 activations with a gap between their
// forward and backward use, T3 a temporary, G2/G1 gradients, W* weights read forward and backward and
// written by the update, Y the next input prepared at the end of the step.
constexpr Use kUses[] = {
    {0, X, kWrite}, {0, Y, kRead},
    {1, X, kRead},  {1, W0, kRead}, {1, A1, kWrite},
    {2, A1, kRead}, {2, W1, kRead}, {2, A2, kWrite},
    {3, A2, kRead}, {3, T3, kReadWrite}, {3, W2, kRead},
    {4, A1, kRead}, {4, W1, kRead}, {4, G2, kWrite},
    {5, G2, kRead}, {5, X, kRead},  {5, W0, kRead}, {5, G1, kWrite},
    {6, G1, kRead}, {6, W0, kWrite}, {6, W1, kWrite},
    {7, Y, kWrite}, {7, W2, kRead},
};

struct Options {
  int steps = 12, copies = 1, settle_us = 1000, sync_arm_ms = 0, segv_step = 2, crash_step = -1, irregular = 0;
  long work_kb = 16384;
  bool mark = false, print_truth = false, altstack = false;
  const char* own_segv = nullptr;
};

// One allocation function per object, so each object has its own call-site, as the tensors of a real
// program do (the step detector finds the period from repeating call-sites; one site for everything
// would look like no structure at all).
// (Two levels: the call-site hash of this libsentinel.so skips one frame too many, so the innermost
// frame, the common allocate(), is not what tells the objects apart.)
__attribute__((noinline)) uint64_t* allocate(size_t bytes) {
  void* p = std::malloc(bytes);
  asm volatile("" : : "r"(p) : "memory");  // keeps the calls from being tail calls
  return static_cast<uint64_t*>(p);
}
volatile uint32_t g_allocations[kNumObjects];
template <int O>
__attribute__((noinline)) uint64_t* alloc_site(size_t bytes) {
  g_allocations[O] = g_allocations[O] + 1;  // different code in every instance: none can be folded
  uint64_t* p = allocate(bytes);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}
template <int... O>
constexpr auto make_alloc_table(std::integer_sequence<int, O...>) {
  return std::array<uint64_t* (*)(size_t), sizeof...(O)>{&alloc_site<O>...};
}
constexpr auto kAlloc = make_alloc_table(std::make_integer_sequence<int, kNumObjects>{});

uint64_t* g_obj[kMaxCopies][kNumObjects];  // the live instance of each object (nullptr if none)
volatile uint64_t g_sink;

size_t object_bytes(int o, int copy) { return size_t(kObjects[o].kib + 100 * copy) * 1024; }
// Phase of copy `copy` on the step clock: the copies' events are interleaved.
int global_phase(int phase, int copy, int copies) { return phase * copies + copy; }

uint64_t now_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000 + uint64_t(ts.tv_nsec) / 1000;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  return x ^ (x >> 27);
}

void print_truth(const Options& opt) {
  const int period = kPeriod * opt.copies;
  std::printf("period %d\n", period);
  for (int c = 0; c < opt.copies; ++c) {
    for (int o = 0; o < kNumObjects; ++o) {
      const ObjectSpec& s = kObjects[o];
      const int birth = s.persistent ? 0 : global_phase(s.birth, c, opt.copies);
      const int death = s.persistent ? period - 1
                        : s.death >= kPeriod ? period + global_phase(s.death - kPeriod, c, opt.copies)
                                             : global_phase(s.death, c, opt.copies);
      std::printf("object %s.%d size %zu persistent %d birth %d death %d\n", s.name, c, object_bytes(o, c),
                  s.persistent ? 1 : 0, birth, death);
    }
    for (const Use& u : kUses) {
      std::printf("use %s.%d %d %s\n", kObjects[u.object].name, c, global_phase(u.phase, c, opt.copies),
                  u.mode == kRead ? "r" : u.mode == kWrite ? "w" : "rw");
    }
  }
}

// Pages of [a, a+len) that /proc/self/maps shows without any access ('---p'); with len 0, pages of
// all the program's live objects.
long protected_pages(uintptr_t only = 0, size_t only_len = 0) {
  static char buf[1 << 20];  // static, not malloc: a buffer this size would itself be an object
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return -1;
  long pages = 0;
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    uintptr_t lo, hi;
    char perms[5] = {};
    if (std::sscanf(buf, "%" SCNxPTR "-%" SCNxPTR " %4s", &lo, &hi, perms) != 3) continue;
    if (std::strcmp(perms, "---p") != 0) continue;
    auto overlap = [&](uintptr_t a, uintptr_t b) {
      const uintptr_t x = lo > a ? lo : a, y = hi < b ? hi : b;
      if (x < y) pages += long((y - x + 4095) / 4096);
    };
    if (only_len != 0) {
      overlap(only, only + only_len);
      continue;
    }
    for (int c = 0; c < kMaxCopies; ++c) {
      for (int o = 0; o < kNumObjects; ++o) {
        if (g_obj[c][o] != nullptr) overlap(reinterpret_cast<uintptr_t>(g_obj[c][o]), reinterpret_cast<uintptr_t>(g_obj[c][o]) + object_bytes(o, c));
      }
    }
  }
  std::fclose(f);
  return pages;
}

// The program's own SIGSEGV use: a private guard page it faults on deliberately.
char* g_guard;
volatile sig_atomic_t g_own_faults, g_foreign_faults;

void on_segv(int, siginfo_t* info, void*) {
  char* addr = static_cast<char*>(info->si_addr);
  if (addr >= g_guard && addr < g_guard + 4096) {
    g_own_faults = g_own_faults + 1;
    mprotect(g_guard, 4096, PROT_READ | PROT_WRITE);
    return;
  }
  // Not ours: the sampler's fault leaked to the program. Open the page so the program can go on; the
  // count makes the run fail.
  g_foreign_faults = g_foreign_faults + 1;
  mprotect(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(addr) & ~uintptr_t{4095}), 4096,
           PROT_READ | PROT_WRITE);
}

// --altstack: the handler runs on an alternate stack the program allocated with malloc, large enough to be an
// object (as Python's faulthandler does): the kernel writes the signal frame there, so it must never be
// protected by the profiler.
bool g_altstack = false;

void install_alt_stack() {
  constexpr size_t kBytes = 64 * 1024;
  stack_t ss {};
  ss.ss_sp = std::malloc(kBytes);
  ss.ss_size = kBytes;
  if (ss.ss_sp == nullptr || sigaltstack(&ss, nullptr) != 0) std::perror("sigaltstack");
  g_altstack = true;
}

void install_segv_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | (g_altstack ? SA_ONSTACK : 0);
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, nullptr) != 0) std::perror("sigaction");
}

void own_fault(long* expected) {
  static_cast<volatile char*>(g_guard)[0] = 1;  // faults: the handler opens the page
  ++*expected;
  mprotect(g_guard, 4096, PROT_NONE);
}

// Streams over an object: reads sum into the checksum (first pass only, so the checksum does not
// depend on the pass count), writes store values derived from the step and phase.
uint64_t touch(uint64_t* p, size_t bytes, Mode mode, uint64_t salt, bool first_pass) {
  const size_t n = bytes / sizeof(uint64_t);
  uint64_t sum = 0;
  if (mode == kRead) {
    for (size_t i = 0; i < n; ++i) sum += p[i];
  } else if (mode == kWrite) {
    for (size_t i = 0; i < n; ++i) p[i] = salt + i;
  } else {  // a fresh temporary: filled, then read back (its first access is a write)
    for (size_t i = 0; i < n; ++i) sum += (p[i] = salt ^ i) * 3;
  }
  return first_pass ? mix(sum) : 0;
}

// The object allocated at the event that begins `phase` (one per event).
int born_at(int phase) {
  for (int o = 0; o < kNumObjects; ++o) {
    if (!kObjects[o].persistent && kObjects[o].birth == phase) return o;
  }
  return -1;
}

// Waits (up to max_ms) until the profiler has armed the phase: the object just allocated and every
// object the phase uses have their window protected (---p). A window touched in the previous phase
// stays open until the service thread's next rearm; on a loaded machine that rearm can come after this
// phase's passes, which are then not seen (CI once scored recall 0.52 with only the new object
// awaited). Waits only while the sampler has windows armed (the cold persistent object C0 is never
// touched, so while sampling runs its window stays protected); before and after the profiled steps
// nothing is protected and it returns at once.
void wait_for_arm(int copy, int phase, int max_ms) {
  auto armed = [&](int o) {
    const uint64_t* p = g_obj[copy][o];
    return p == nullptr || protected_pages(reinterpret_cast<uintptr_t>(p), object_bytes(o, copy)) > 0;
  };
  auto phase_armed = [&] {
    const int born = born_at(phase);
    if (born >= 0 && !armed(born)) return false;
    for (const Use& u : kUses) {
      if (u.phase == phase && !armed(u.object)) return false;
    }
    return true;
  };
  const uint64_t end = now_us() + uint64_t(max_ms) * 1000;
  while (!phase_armed() && protected_pages() > 0 && now_us() < end) usleep(50);
}

void settle(int us) {
  uint64_t scratch[2048] = {};  // 16 KiB on the stack: not an object
  const uint64_t end = now_us() + uint64_t(us);
  uint64_t s = 0;
  while (now_us() < end) {
    for (auto& v : scratch) s += (v += 1);
  }
  g_sink = s;
}

bool parse(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!std::strcmp(a, "--print-truth")) opt->print_truth = true;
    else if (!std::strcmp(a, "--mark")) opt->mark = true;
    else if (!std::strcmp(a, "--altstack")) opt->altstack = true;
    else if (v == nullptr) return false;
    else if (!std::strcmp(a, "--steps")) opt->steps = std::atoi(v), ++i;
    else if (!std::strcmp(a, "--copies")) opt->copies = std::atoi(v), ++i;
    else if (!std::strcmp(a, "--work-kb")) opt->work_kb = std::atol(v), ++i;
    else if (!std::strcmp(a, "--settle-us")) opt->settle_us = std::atoi(v), ++i;
    else if (!std::strcmp(a, "--sync-arm-ms")) opt->sync_arm_ms = std::atoi(v), ++i;
    else if (!std::strcmp(a, "--own-segv")) opt->own_segv = v, ++i;
    else if (!std::strcmp(a, "--segv-step")) opt->segv_step = std::atoi(v), ++i;
    else if (!std::strcmp(a, "--crash-step")) opt->crash_step = std::atoi(v), ++i;
    else if (!std::strcmp(a, "--irregular")) opt->irregular = std::atoi(v), ++i;
    else return false;
  }
  return opt->steps >= 1 && opt->copies >= 1 && opt->copies <= kMaxCopies && opt->work_kb >= 0 &&
         opt->settle_us >= 0 &&
         (opt->own_segv == nullptr || !std::strcmp(opt->own_segv, "before") || !std::strcmp(opt->own_segv, "during"));
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) {
    std::fprintf(stderr, "usage: %s [--print-truth] [--steps N] [--copies R] [--work-kb K] [--settle-us U] "
                         "[--sync-arm-ms M] [--mark] [--own-segv before|during] [--segv-step S] [--crash-step S] [--altstack] [--irregular P]\n", argv[0]);
    return 2;
  }
  if (opt.print_truth) {
    print_truth(opt);
    return 0;
  }
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  auto step_begin = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "sentinel_step_begin"));
  auto get_counters = reinterpret_cast<int (*)(sentinel_counters*)>(dlsym(RTLD_DEFAULT, "sentinel_get_counters"));
  g_guard = static_cast<char*>(mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (g_guard == MAP_FAILED) return 1;
  bool segv_installed = false;
  long expected_own = 0;
  if (opt.altstack) install_alt_stack();
  if (opt.own_segv != nullptr && !std::strcmp(opt.own_segv, "before")) {
    install_segv_handler();
    segv_installed = true;
  }

  const int C = opt.copies;
  for (int c = 0; c < C; ++c) {
    for (int o = 0; o < kNumObjects; ++o) {
      if (!kObjects[o].persistent) continue;
      g_obj[c][o] = kAlloc[o](object_bytes(o, c));
      if (o != C0) touch(g_obj[c][o], object_bytes(o, c), kWrite, 0x1234 + uint64_t(o), false);
    }
  }
  uint64_t total = 0;
  for (int step = 0; step < opt.steps; ++step) {
    if (opt.mark && step_begin != nullptr) step_begin();
    uint64_t check = 0;
    for (int gp = 0; gp < kPeriod * C; ++gp) {
      const int phase = gp / C, copy = gp % C;
      // The event: the allocation of the object born in this phase.
      for (int o = 0; o < kNumObjects; ++o) {
        if (!kObjects[o].persistent && kObjects[o].birth == phase) {
          g_obj[copy][o] = kAlloc[o](object_bytes(o, copy));
        }
      }
      if (gp == 0 && get_counters != nullptr) {
        sentinel_counters sc{};
        get_counters(&sc);
        std::fprintf(stderr, "kp: step %d sentinel_step %" PRId64 " period %u\n", step, sc.current_step, sc.step_period);
      }
      auto free_due = [&](bool at_end) {
        for (int o = 0; o < kNumObjects; ++o) {
          const ObjectSpec& s = kObjects[o];
          if (s.persistent || s.free_at_end != at_end || s.death % kPeriod != phase) continue;
          std::free(g_obj[copy][o]);
          g_obj[copy][o] = nullptr;
        }
      };
      free_due(false);
      if (phase == 3 && copy == 0 && int(mix(uint64_t(step) + 77) % 100) < opt.irregular) {
        // An allocation the plan has never seen (its own call-site, a size no object of the pattern has).
        uint64_t* extra = allocate(316 * 1024);
        extra[0] = uint64_t(step);
        asm volatile("" : : "r"(extra) : "memory");
        std::free(extra);
      }
      settle(opt.settle_us);
      if (opt.sync_arm_ms > 0) wait_for_arm(copy, phase, opt.sync_arm_ms);
      if (segv_installed) own_fault(&expected_own);
      // The work of this phase: a fixed amount of traffic over exactly the objects named for it.
      size_t bytes = 0;
      for (const Use& u : kUses) {
        if (u.phase == phase && g_obj[copy][u.object] != nullptr) bytes += object_bytes(u.object, copy);
      }
      const long passes = bytes == 0 ? 0 : (opt.work_kb * 1024 + long(bytes) - 1) / long(bytes);
      for (long pass = 0; pass < passes; ++pass) {
        for (const Use& u : kUses) {
          if (u.phase != phase || g_obj[copy][u.object] == nullptr) continue;
          const uint64_t salt = mix(uint64_t(step) * 1000 + uint64_t(gp) * 16 + uint64_t(u.object));
          check += touch(g_obj[copy][u.object], object_bytes(u.object, copy), u.mode, salt, pass == 0);
        }
      }
      if (step == opt.crash_step && phase == 3) {
        // The program's own bug (a wild write): it must kill the program as it would without Sentinel.
        // Through a volatile pointer, so the compiler cannot turn a known-null store into a trap.
        char* volatile wild = reinterpret_cast<char*>(64);
        *wild = 1;
      }
      if (opt.own_segv != nullptr && !segv_installed && step == opt.segv_step && phase == 2) {
        // "during" means while windows are protected: on a loaded machine the service thread may not have
        // armed this phase yet, so wait for it (bounded; the test checks the count printed below).
        if (std::strcmp(opt.own_segv, "during") == 0) {
          for (int waited_ms = 0; protected_pages() == 0 && waited_ms < 10000; ++waited_ms) usleep(1000);
        }
        std::fprintf(stderr, "kp: installing SIGSEGV handler at step %d, protected object pages %ld\n", step,
                     protected_pages());
        install_segv_handler();
        segv_installed = true;
      }
      if (phase == 6 && copy == C - 1) {
        std::fprintf(stderr, "kp: maps step %d protected_pages %ld\n", step, protected_pages());
      }
      free_due(true);
    }
    total = mix(total ^ check);
    std::printf("step %d checksum %016" PRIx64 "\n", step, check);
  }
  std::fprintf(stderr, "kp: maps end protected_pages %ld\n", protected_pages());
  if (opt.own_segv != nullptr) {
    std::fprintf(stderr, "kp: own_faults %ld expected %ld foreign_faults %ld\n", long(g_own_faults), expected_own,
                 long(g_foreign_faults));
  }
  std::printf("final checksum %016" PRIx64 "\n", total);
  std::fflush(stdout);
  for (int c = 0; c < C; ++c) {
    for (int o = 0; o < kNumObjects; ++o) std::free(g_obj[c][o]);
  }
  return g_foreign_faults == 0 ? 0 : 3;
}
