// Cost of the malloc family as seen by a program, with or without libsentinel.so preloaded.
//
// The program itself knows nothing about Sentinel: run_malloc_bench.py runs this same binary plain,
// under LD_PRELOAD=libsentinel.so and in pass-through mode, alternately, and compares. Each case prints
// one line "case <name> <ns per op> <ops timed> <minor page faults per op>"; the first line says
// whether Sentinel is loaded and active ("sentinel absent|passthrough|active"), looked up at run time
// so the binary does not link it.
//
//   sentinel_bench_malloc [--case NAME]... [--reps N] [--scale F] [--list]
//
// One op is one malloc/free pair (calloc/free for calloc_large, one realloc call for realloc_grow).
// Within one run a case is executed once untimed (warm-up: first extents, first faults) and then --reps
// times; the median of the reps is printed. Sizes come from a fixed pseudo-random sequence, generated
// before timing so its cost is not measured.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPage = 4096;

// Keeps the compiler from eliding a malloc/free pair whose pointer is never used (GCC and Clang may
// remove such pairs at -O2).
inline void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

// xorshift64*: deterministic sizes, identical in every run and every mode.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
};

// Sizes uniform in [lo, hi], rounded down to a multiple of `quantum`.
std::vector<size_t> uniform_sizes(size_t n, size_t lo, size_t hi, size_t quantum, uint64_t seed) {
  Rng r{seed};
  std::vector<size_t> v(n);
  for (auto& s : v) s = std::max(lo, (lo + r.next() % (hi - lo + 1)) / quantum * quantum);
  return v;
}

// Sizes log-uniform in [lo, hi] (so 64 KiB .. 8 MiB is not dominated by the multi-MiB end).
std::vector<size_t> log_sizes(size_t n, size_t lo, size_t hi, uint64_t seed) {
  Rng r{seed};
  std::vector<size_t> v(n);
  const double a = std::log(double(lo)), b = std::log(double(hi));
  for (auto& s : v) {
    const double u = double(r.next() >> 11) / double(1ull << 53);
    s = std::clamp(size_t(std::exp(a + u * (b - a))), lo, hi);
  }
  return v;
}

// Allocates `batch` blocks, optionally writes one byte per page, frees them in allocation order;
// repeats until `ops` pairs are done. Batches keep several blocks live at once, as a program does.
void malloc_batches(const std::vector<size_t>& sizes, size_t ops, size_t batch, bool touch) {
  std::vector<void*> live(batch);
  size_t k = 0;
  for (size_t done = 0; done < ops; done += batch) {
    for (size_t i = 0; i < batch; ++i) {
      const size_t n = sizes[k++ % sizes.size()];
      char* p = static_cast<char*>(std::malloc(n));
      if (p == nullptr) std::abort();
      if (touch) {
        for (size_t off = 0; off < n; off += kPage) p[off] = 1;
      }
      escape(p);
      live[i] = p;
    }
    for (size_t i = 0; i < batch; ++i) std::free(live[i]);
  }
}

struct Case {
  const char* name;
  const char* what;
  size_t ops;  // ops per timed rep at --scale 1
  void (*run)(size_t ops);
};

const std::vector<size_t>& small_sizes() {
  static const auto v = uniform_sizes(4096, 16, 1024, 16, 1);
  return v;
}
const std::vector<size_t>& medium_sizes() {
  static const auto v = uniform_sizes(4096, 4 << 10, 32 << 10, 16, 2);
  return v;
}
const std::vector<size_t>& large_sizes() {
  static const auto v = log_sizes(4096, 64 << 10, 8 << 20, 3);
  return v;
}

void run_small(size_t ops) { malloc_batches(small_sizes(), ops, 64, false); }
void run_medium(size_t ops) { malloc_batches(medium_sizes(), ops, 16, false); }
void run_large(size_t ops) { malloc_batches(large_sizes(), ops, 4, false); }
void run_large_touch(size_t ops) { malloc_batches(large_sizes(), ops, 4, true); }

void run_calloc_large(size_t ops) {
  const auto& sizes = large_sizes();
  for (size_t i = 0; i < ops; ++i) {
    void* p = std::calloc(1, sizes[i % sizes.size()]);
    if (p == nullptr) std::abort();
    escape(p);
    std::free(p);
  }
}

// One op = one realloc call. Each chain starts at 16 KiB (below the 64 KiB object threshold) and grows
// by 1/4 per call up to 1 MiB, so every chain crosses the threshold once and then grows as an object.
// The last byte is written after each call, so the block is really usable at its new size.
void run_realloc_grow(size_t ops) {
  size_t done = 0;
  while (done < ops) {
    size_t n = 16 << 10;
    char* p = static_cast<char*>(std::malloc(n));
    if (p == nullptr) std::abort();
    p[n - 1] = 1;
    while (n < (1 << 20) && done < ops) {
      n += n / 4;
      p = static_cast<char*>(std::realloc(p, n));
      if (p == nullptr) std::abort();
      p[n - 1] = 1;
      ++done;
    }
    std::free(p);
  }
}

// Two threads, each doing `ops` large malloc/free pairs on its own size sequence at the same time.
// ns/op is wall time divided by ops per thread: the cost one thread sees while the other competes.
void run_mt2_large(size_t ops) {
  static const auto other = log_sizes(4096, 64 << 10, 8 << 20, 4);
  std::thread t([ops] { malloc_batches(other, ops, 4, false); });
  malloc_batches(large_sizes(), ops, 4, false);
  t.join();
}

const Case kCases[] = {
    {"small", "malloc/free 16..1024 B, batches of 64", 400000, run_small},
    {"medium", "malloc/free 4..32 KiB, batches of 16", 200000, run_medium},
    {"large", "malloc/free 64 KiB..8 MiB (log-uniform), batches of 4, untouched", 20000, run_large},
    {"large_touch", "as large, one byte written per 4 KiB page", 2000, run_large_touch},
    {"calloc_large", "calloc/free 64 KiB..8 MiB", 4000, run_calloc_large},
    {"realloc_grow", "realloc 16 KiB -> 1 MiB in 25% steps (crosses 64 KiB)", 20000, run_realloc_grow},
    {"mt2_large", "2 threads, each as large; wall ns per op per thread", 10000, run_mt2_large},
};

const char* sentinel_state() {
  using ActiveFn = int (*)();
  auto active = reinterpret_cast<ActiveFn>(dlsym(RTLD_DEFAULT, "sentinel_active"));
  if (active == nullptr) return "absent";
  return active() ? "active" : "passthrough";
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

double time_ns(const Case& c, size_t ops) {
  const auto t0 = Clock::now();
  c.run(ops);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

int usage() {
  std::fprintf(stderr,
               "usage: sentinel_bench_malloc [--case NAME]... [--reps N] [--scale F] [--list]\n"
               "  Prints 'case NAME NS_PER_OP OPS FAULTS_PER_OP' per case (median of N reps, default 5).\n"
               "  --scale multiplies the ops per rep (default 1).\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> wanted;
  int reps = 5;
  double scale = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list") {
      for (const auto& c : kCases) std::printf("%-13s %s\n", c.name, c.what);
      return 0;
    } else if (a == "--case" && i + 1 < argc) {
      wanted.emplace_back(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) return usage();
    } else if (a == "--scale" && i + 1 < argc) {
      scale = std::atof(argv[++i]);
      if (!(scale > 0)) return usage();
    } else {
      return usage();
    }
  }
  for (const auto& w : wanted) {
    if (std::none_of(std::begin(kCases), std::end(kCases), [&](const Case& c) { return w == c.name; })) {
      std::fprintf(stderr, "unknown case '%s' (see --list)\n", w.c_str());
      return 2;
    }
  }
  std::printf("sentinel %s\n", sentinel_state());
  for (const auto& c : kCases) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), c.name) == wanted.end()) continue;
    const size_t ops = std::max<size_t>(64, size_t(double(c.ops) * scale)) / 64 * 64;
    time_ns(c, std::max<size_t>(64, ops / 4));  // warm-up, untimed
    std::vector<double> per_op;
    // Page faults explain most differences between the large cases (fresh mmap vs. recycled extents).
    const long faults_before = minor_faults();
    for (int r = 0; r < reps; ++r) per_op.push_back(time_ns(c, ops) / double(ops));
    const double faults = double(minor_faults() - faults_before) / double(ops) / reps;
    std::nth_element(per_op.begin(), per_op.begin() + reps / 2, per_op.end());
    std::printf("case %s %.1f %zu %.2f\n", c.name, per_op[reps / 2], ops, faults);
    std::fflush(stdout);
  }
  return 0;
}
