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
// One op is one malloc/free pair (calloc/free for the calloc cases, one realloc call for the realloc cases).
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

// One op = one realloc call. Each chain starts at `from` and grows by 1/`step` of its size per call up to
// `to`. With touch_new every page the call added is written (a buffer being filled, as Python fills a
// bytearray or a list it grows); otherwise only the last byte.
void realloc_chains(size_t ops, size_t from, size_t to, size_t step, bool touch_new) {
  size_t done = 0;
  while (done < ops) {
    size_t n = from;
    char* p = static_cast<char*>(std::malloc(n));
    if (p == nullptr) std::abort();
    for (size_t off = 0; off < n; off += kPage) p[off] = 1;
    p[n - 1] = 1;
    while (n < to && done < ops) {
      const size_t before = n;
      n += n / step;
      p = static_cast<char*>(std::realloc(p, n));
      if (p == nullptr) std::abort();
      if (touch_new) {
        for (size_t off = (before + kPage - 1) / kPage * kPage; off < n; off += kPage) p[off] = 1;
      }
      p[n - 1] = 1;
      ++done;
    }
    std::free(p);
  }
}

// Chains from 16 KiB (below the 64 KiB object threshold: under Sentinel they stay the system
// allocator's, which grows them) to 1 MiB, in 25% and 12.5% steps.
void run_realloc_grow(size_t ops) { realloc_chains(ops, 16 << 10, 1 << 20, 4, false); }
void run_realloc_grow_12(size_t ops) { realloc_chains(ops, 16 << 10, 1 << 20, 8, false); }
// Chains of objects: from 64 KiB (an object from its first malloc) to 64 MiB, every new page written.
void run_realloc_big_25(size_t ops) { realloc_chains(ops, 64 << 10, 64 << 20, 4, true); }
void run_realloc_big_12(size_t ops) { realloc_chains(ops, 64 << 10, 64 << 20, 8, true); }

// calloc of 1..8 MiB, one byte per page read back (the zeros are there), free.
void run_calloc_read(size_t ops) {
  static const auto sizes = log_sizes(4096, 1 << 20, 8 << 20, 5);
  for (size_t i = 0; i < ops; ++i) {
    const size_t n = sizes[i % sizes.size()];
    auto* p = static_cast<volatile char*>(std::calloc(1, n));
    if (p == nullptr) std::abort();
    char sum = 0;
    for (size_t off = 0; off < n; off += kPage) sum = static_cast<char>(sum + p[off]);
    if (sum != 0) std::abort();
    std::free(const_cast<char*>(p));
  }
}

// `threads` threads, each doing `ops` large malloc/free pairs on its own size sequence at the same time.
// ns/op is wall time divided by ops per thread: the cost one thread sees while the others compete (more
// threads than CPUs: they also wait for a CPU, in both modes alike; a lock holder that loses its CPU makes
// the others wait for it, which is what these cases look for).
// Thread k's sizes: thread 0 has large's, thread 1 mt2_large's second sequence as before; made once, in
// the untimed warm-up.
const std::vector<size_t>& thread_sizes(int k) {
  static const auto all = [] {
    std::vector<std::vector<size_t>> v;
    for (int t = 0; t < 8; ++t) v.push_back(log_sizes(4096, 64 << 10, 8 << 20, 3 + t));
    return v;
  }();
  return all[k];
}

void run_mt_large(size_t ops, int threads) {
  thread_sizes(0);
  std::vector<std::thread> others;
  for (int k = 1; k < threads; ++k) others.emplace_back([ops, k] { malloc_batches(thread_sizes(k), ops, 4, false); });
  malloc_batches(thread_sizes(0), ops, 4, false);
  for (auto& t : others) t.join();
}
void run_mt1_large(size_t ops) { run_mt_large(ops, 1); }
void run_mt2_large(size_t ops) { run_mt_large(ops, 2); }
void run_mt4_large(size_t ops) { run_mt_large(ops, 4); }
void run_mt8_large(size_t ops) { run_mt_large(ops, 8); }

const Case kCases[] = {
    {"small", "malloc/free 16..1024 B, batches of 64", 400000, run_small},
    {"medium", "malloc/free 4..32 KiB, batches of 16", 200000, run_medium},
    {"large", "malloc/free 64 KiB..8 MiB (log-uniform), batches of 4, untouched", 20000, run_large},
    {"large_touch", "as large, one byte written per 4 KiB page", 2000, run_large_touch},
    {"calloc_large", "calloc/free 64 KiB..8 MiB", 4000, run_calloc_large},
    {"calloc_read", "calloc 1..8 MiB, one byte per page read back, free", 1000, run_calloc_read},
    {"realloc_grow", "realloc 16 KiB -> 1 MiB in 25% steps (crosses 64 KiB)", 20000, run_realloc_grow},
    {"realloc_grow_12", "realloc 16 KiB -> 1 MiB in 12.5% steps (crosses 64 KiB)", 20000, run_realloc_grow_12},
    {"realloc_big_25", "realloc 64 KiB -> 64 MiB in 25% steps, new pages written", 640, run_realloc_big_25},
    {"realloc_big_12", "realloc 64 KiB -> 64 MiB in 12.5% steps, new pages written", 640, run_realloc_big_12},
    {"mt1_large", "1 thread as large (the mt cases' baseline)", 10000, run_mt1_large},
    {"mt2_large", "2 threads, each as large; wall ns per op per thread", 10000, run_mt2_large},
    {"mt4_large", "4 threads, each as large; wall ns per op per thread", 5000, run_mt4_large},
    {"mt8_large", "8 threads, each as large; wall ns per op per thread", 2500, run_mt8_large},
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
