// Guest test (b), under LD_PRELOAD=libsentinel.so with SENTINEL_FAST_BUDGET set (bytes or a
// percentage): two threads allocate far more object bytes than the budget, and a sampler thread reads
// where the pages of the live objects really are (move_pages query) every few milliseconds. The
// object bytes resident on node 0 must never exceed the budget:
//   - bytes budget B:       node-0 bytes <= B
//   - percentage budget p:  node-0 bytes <= p * (peak of the live objects' extent bytes so far)
// The registry of live objects is a static array and allocation+registration (and unregistration+
// free) happen under one mutex the sampler also takes, so a sample sees a consistent set of objects
// and no extent is reused while it is being read.
#include <malloc.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>

#include "place_probe.h"

using namespace place_probe;

namespace {

constexpr int kSlots = 512;
constexpr int kThreads = 2;
constexpr uint64_t kTotalBytes = 1536ull << 20;  // allocated over the run, per thread

struct Entry {
  void* p = nullptr;
  size_t size = 0;
  size_t extent = 0;
};
Entry g_live[kSlots];
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
uint64_t g_live_extent = 0;  // guarded by g_mu
uint64_t g_peak_extent = 0;  // guarded by g_mu
std::atomic<bool> g_stop{false};

struct Sample {
  uint64_t samples = 0, violations = 0;
  uint64_t max_fast = 0, max_slow = 0, worst_excess = 0;
};

uint64_t allowed(const sentinel::place::BudgetSpec& b, uint64_t peak) {
  if (b.kind == sentinel::place::BudgetKind::kBytes) return b.bytes;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(peak) * b.percent_ppm / 1000000);
}

void sampler(const sentinel::place::BudgetSpec budget, Sample* out) {
  const timespec pause{0, 3 * 1000 * 1000};
  while (!g_stop.load()) {
    uint64_t fast = 0, slow = 0;
    pthread_mutex_lock(&g_mu);
    for (const Entry& e : g_live) {
      if (e.p == nullptr) continue;
      const NodePages pages = node_pages(e.p, e.size);
      fast += pages.n0 * 4096;
      slow += pages.n1 * 4096;
    }
    const uint64_t limit = allowed(budget, g_peak_extent);
    pthread_mutex_unlock(&g_mu);
    ++out->samples;
    if (fast > out->max_fast) out->max_fast = fast;
    if (slow > out->max_slow) out->max_slow = slow;
    if (fast > limit) {
      ++out->violations;
      if (fast - limit > out->worst_excess) out->worst_excess = fast - limit;
      std::fprintf(stderr, "sample %llu: %llu bytes of objects on node 0, budget %llu\n",
                   (unsigned long long)out->samples, (unsigned long long)fast, (unsigned long long)limit);
    }
    nanosleep(&pause, nullptr);
  }
}

void worker(int id, ObjectNodeFn node_of, std::atomic<uint64_t>* allocated) {
  std::mt19937_64 rng(77 + id);
  uint64_t done = 0;
  const int first = id * (kSlots / kThreads), count = kSlots / kThreads / 4;  // up to 64 live per thread
  while (done < kTotalBytes) {
    const int slot = first + static_cast<int>(rng() % count);
    pthread_mutex_lock(&g_mu);
    Entry& e = g_live[slot];
    if (e.p != nullptr) {
      g_live_extent -= e.extent;
      std::free(e.p);
      e.p = nullptr;
      pthread_mutex_unlock(&g_mu);
      continue;
    }
    const size_t size = (64 << 10) + rng() % (4 << 20);
    void* p = std::malloc(size);
    if (p == nullptr) fail("malloc(%zu) failed", size);
    e.p = p;
    e.size = size;
    e.extent = malloc_usable_size(p);
    g_live_extent += e.extent;
    if (g_live_extent > g_peak_extent) g_peak_extent = g_live_extent;
    pthread_mutex_unlock(&g_mu);
    // Touching outside the lock: a sample may see a partly touched object, never a freed one.
    const int node = node_of(p);
    if (node != 0 && node != 1) fail("sentinel_object_node(%p) = %d", p, node);
    std::memset(p, id + 1, size);
    done += size;
  }
  allocated->fetch_add(done);
}

}  // namespace

int main() {
  require_guest();
  const ObjectNodeFn node_of = object_node_fn();
  const sentinel::place::BudgetSpec budget = budget_from_env();
  PROBE_CHECK(budget.kind != sentinel::place::BudgetKind::kUnlimited, "a budget is needed");

  Sample s;
  std::thread sample_thread(sampler, budget, &s);
  std::atomic<uint64_t> allocated{0};
  std::thread workers[kThreads];
  for (int i = 0; i < kThreads; ++i) workers[i] = std::thread(worker, i, node_of, &allocated);
  for (auto& w : workers) w.join();
  g_stop.store(true);
  sample_thread.join();

  pthread_mutex_lock(&g_mu);
  const uint64_t peak = g_peak_extent;
  for (Entry& e : g_live) std::free(e.p);
  pthread_mutex_unlock(&g_mu);

  std::printf("allocated %llu MiB in objects; live peak %llu MiB; budget %llu MiB at the end\n",
              (unsigned long long)(allocated.load() >> 20), (unsigned long long)(peak >> 20),
              (unsigned long long)(allowed(budget, peak) >> 20));
  std::printf("%llu samples: max %llu KiB of objects on node 0, max %llu KiB on node 1, %llu over budget\n",
              (unsigned long long)s.samples, (unsigned long long)(s.max_fast >> 10),
              (unsigned long long)(s.max_slow >> 10), (unsigned long long)s.violations);
  PROBE_CHECK(s.violations == 0, "node-0 object bytes exceeded the budget in %llu samples (worst by %llu bytes)",
              (unsigned long long)s.violations, (unsigned long long)s.worst_excess);
  PROBE_CHECK(s.samples >= 10, "too few samples (%llu) to mean anything", (unsigned long long)s.samples);
  PROBE_CHECK(allocated.load() > 4 * allowed(budget, peak), "the run must allocate far more than the budget");
  PROBE_CHECK(s.max_fast > 0, "nothing was ever on node 0: the budget was not used");
  PROBE_CHECK(s.max_slow > 0, "nothing was ever on node 1: the budget did not force anything slow");
  std::printf("OK: object bytes on node 0 stayed within the budget\n");
  return 0;
}
