// Migration benchmarks, printed as tables.
//   sentinel_bench_migrate throughput   move_pages throughput per extent size, 4 KiB .. 64 MiB, with
//                                       and without MADV_HUGEPAGE, node 0 -> 1 -> 0 (needs two nodes:
//                                       run it in the guest, scripts/numa-guest.sh)
//   sentinel_bench_migrate enqueue      cost of Engine::enqueue (ns per call) on this machine
//   sentinel_bench_migrate              both (throughput is skipped with one node)
// Under QEMU TCG the throughput is emulation speed, not hardware speed; the program says so.
#include <numa.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "migrate/engine.h"

using namespace sentinel::migrate;
using Clock = std::chrono::steady_clock;

namespace {

double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool in_guest() { return std::getenv("SENTINEL_IN_GUEST") != nullptr; }

int throughput() {
  if (numa_available() < 0 || numa_max_node() < 1 || numa_node_size64(1, nullptr) <= 0) {
    std::printf("throughput: skipped, needs two memory nodes (run: scripts/numa-guest.sh %s throughput)\n",
                "<build>/bench/migrate/sentinel_bench_migrate");
    return 0;
  }
  std::printf("move_pages throughput, node 0 -> 1 and 1 -> 0, through the migration engine\n");
  if (in_guest())
    std::printf("NOTE: inside the QEMU TCG guest: figures are EMULATION speed, not hardware speed\n");
  const size_t total_target = size_t{128} << 20;  // bytes moved per row and direction (at least one extent)
  std::printf("%10s %5s %7s %12s %12s %12s %10s\n", "extent", "thp", "moves", "0->1 GB/s", "1->0 GB/s",
              "us/move", "huge%");
  EngineConfig cfg;
  cfg.fast_node = 0;
  cfg.slow_node = 1;
  cfg.chunk_pages = 1024;
  Engine e(cfg);
  std::string err;
  if (!e.start(&err)) {
    std::fprintf(stderr, "engine: %s\n", err.c_str());
    return 1;
  }
  for (int thp = 0; thp < 2; ++thp) {
    for (size_t size = 4096; size <= (size_t{64} << 20); size *= 4) {
      size_t count = std::max<size_t>(1, total_target / size);
      if (count > 256) count = 256;  // small extents: per-call overhead dominates; keep rows short
      size_t map_len = size * count + (size_t{2} << 20);
      char* base = static_cast<char*>(mmap(nullptr, map_len, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (base == MAP_FAILED) return 1;
      char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + (2u << 20) - 1) & ~uintptr_t((2u << 20) - 1));
      madvise(aligned, size * count, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
      std::memset(aligned, 1, size * count);
      // How much of it really got huge pages (AnonHugePages is process-wide, so read it around).
      double gbs[2];
      double us_per_move = 0;
      for (int dir = 0; dir < 2; ++dir) {
        int node = dir == 0 ? 1 : 0;
        std::vector<Ticket> t;
        auto t0 = Clock::now();
        for (size_t i = 0; i < count; ++i) {
          Ticket k;
          while (!(k = e.enqueue(i, 1, aligned + i * size, size, node, Priority::kNormal)).valid()) {
          }
          t.push_back(k);
        }
        for (auto k : t) e.wait(k, std::chrono::hours(1));
        double s = secs(Clock::now() - t0);
        gbs[dir] = static_cast<double>(size * count) / s / 1e9;
        us_per_move += s / static_cast<double>(count) * 1e6 / 2;
      }
      size_t huge = 0;
      {
        FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
        char line[256];
        while (f && std::fgets(line, sizeof line, f))
          if (!std::strncmp(line, "AnonHugePages:", 14)) huge = std::strtoull(line + 14, nullptr, 10) << 10;
        if (f) std::fclose(f);
      }
      double huge_pct = 100.0 * static_cast<double>(std::min(huge, size * count)) / static_cast<double>(size * count);
      std::printf("%9zuK %5s %7zu %12.3f %12.3f %12.1f %9.0f%%\n", size >> 10, thp ? "on" : "off", count, gbs[0],
                  gbs[1], us_per_move, huge_pct);
      munmap(base, map_len);
    }
  }
  auto s = e.snapshot();
  std::printf("engine: %lu moves done, %lu failed, %lu busy pages, %lu ENOMEM pages\n",
              (unsigned long)s.moves_done, (unsigned long)s.moves_failed, (unsigned long)s.pages_busy,
              (unsigned long)s.pages_nomem);
  return 0;
}

int enqueue_cost() {
  std::printf("\nEngine::enqueue cost%s\n", in_guest() ? " (inside the TCG guest: emulated)" : " (host)");
  std::printf("%-34s %12s %12s\n", "case", "ns/enqueue", "ns/cancel");
  static char buf[4096] __attribute__((aligned(4096)));
  const int kRounds = 20, kBatch = 4000;
  // Enqueue a batch, then cancel it, while the engine drains what it already took (4 KiB no-op
  // moves): the realistic mix of the allocator's paths, including the doorbell wake-up.
  {
    EngineConfig cfg;
    cfg.queue_capacity = kBatch;
    Engine e(cfg);
    std::string err;
    if (!e.start(&err)) return 1;
    double enq_ns = 0, cancel_ns = 0;
    for (int r = 0; r < kRounds; ++r) {
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) e.enqueue(i, r, buf, sizeof buf, 0, static_cast<Priority>(i % 3));
      auto t1 = Clock::now();
      for (int i = 0; i < kBatch; ++i) e.cancel(i, r);
      auto t2 = Clock::now();
      enq_ns += secs(t1 - t0) * 1e9 / kBatch;
      cancel_ns += secs(t2 - t1) * 1e9 / kBatch;
      while (e.queued() > 0) {
      }
    }
    std::printf("%-34s %12.1f %12.1f\n", "enqueue+cancel, engine draining", enq_ns / kRounds, cancel_ns / kRounds);
  }
  // Pure enqueue into a queue the engine cannot drain (it is busy with one long move).
  {
    EngineConfig cfg;
    cfg.queue_capacity = kBatch + 1;
    cfg.chunk_pages = 1;
    Engine e(cfg);
    std::string err;
    if (!e.start(&err)) return 1;
    size_t big_len = size_t{1} << 30;
    void* big = mmap(nullptr, big_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    Ticket gate = e.enqueue(999999, 0, big, big_len, 0, Priority::kHigh);
    while (e.query(gate) == State::kQueued) {
    }
    auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) e.enqueue(i, 0, buf, sizeof buf, 0, Priority::kNormal);
    auto t1 = Clock::now();
    Ticket refused = e.enqueue(1, 0, buf, sizeof buf, 0, Priority::kNormal);
    (void)refused;
    auto t2 = Clock::now();
    for (int i = 0; i < 1000; ++i) e.enqueue(1, 0, buf, sizeof buf, 0, Priority::kNormal);
    auto t3 = Clock::now();
    std::printf("%-34s %12.1f %12s\n", "queue only (engine busy)", secs(t1 - t0) * 1e9 / kBatch, "-");
    std::printf("%-34s %12.1f %12s\n", "queue full (refused)", secs(t3 - t2) * 1e9 / 1000, "-");
    e.cancel(999999, 0);
    e.stop();
    munmap(big, big_len);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "all";
  if (what == "--help" || what == "-h") {
    std::printf("usage: sentinel_bench_migrate [throughput|enqueue|all]\n");
    return 0;
  }
  int rc = 0;
  if (what == "throughput" || what == "all") rc |= throughput();
  if (what == "enqueue" || what == "all") rc |= enqueue_cost();
  return rc;
}
