// The migration rows of the calibration bench: move_pages of a buffer from one node to the other in
// batches of 512 pages, each way, with 4 KiB and with 2 MiB pages, in virtual time, with where the
// time went (kernel and user instructions, string elements, misses per node and how many of them a
// stream prefetcher would have fetched, write-backs). Then a compute thread's virtual time alone and
// while another thread migrates (a migration must not slow down a vCPU that does not migrate).
#include <numa.h>
#include <numaif.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "calibrate.h"

namespace sentinel::slowtier {
namespace {

constexpr size_t kBatchPages = 512;
constexpr size_t kSmallPage = 4096;
constexpr size_t kHugePage = 2u << 20;

// Moves every page of [p, p + bytes) to `node`, one address per `page` bytes, in batches of `batch`
// pages. Returns the pages that did not end up on `node`.
size_t move_all(void* p, size_t bytes, size_t page, int node, size_t batch = kBatchPages) {
  const size_t n = bytes / page;
  std::vector<void*> addrs(batch);
  std::vector<int> nodes(batch, node);
  std::vector<int> status(batch);
  size_t wrong = 0;
  for (size_t off = 0; off < n; off += batch) {
    const size_t k = std::min(batch, n - off);
    for (size_t i = 0; i < k; ++i) addrs[i] = static_cast<char*>(p) + (off + i) * page;
    if (numa_move_pages(0, k, addrs.data(), nodes.data(), status.data(), MPOL_MF_MOVE) < 0) return n;
    for (size_t i = 0; i < k; ++i) wrong += status[i] == node ? 0 : 1;
  }
  return wrong;
}

// The same with one mbind(MPOL_BIND, MPOL_MF_MOVE) over the range: the kernel walks the page tables
// itself instead of reading an address array.
size_t mbind_all(void* p, size_t bytes, int node) {
  unsigned long mask = 1ul << node;
  return mbind(p, bytes, MPOL_BIND, &mask, sizeof mask * 8, MPOL_MF_MOVE) == 0 ? 0 : bytes / kSmallPage;
}

uint64_t anon_huge_kb() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb;
}

enum class Mover { kMovePages, kMbind };

struct MigrationRow {
  const char* name;
  Mover mover;
  size_t page;
  int from, to;
  double published_gbps;
  bool ran = false;
  size_t misplaced = 0;
  Measured m;
};

// Virtual ns of this thread's vCPU for a fixed integer loop (no memory traffic).
bool compute_loop_virtual_ns(uint64_t iterations, double* out) {
  Measured m;
  const bool ok = measure_on_own_vcpu([&] {
    uint64_t x = 1;
    for (uint64_t i = 0; i < iterations; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(x));
    }
  }, &m);
  *out = m.virtual_ns;
  return ok;
}

// The preset's migration figure for a page size: the tier's own, or its -2m sibling's for huge pages.
double published_gbps(const MemorySystem& tier, size_t page) {
  std::string base = tier.name;
  const bool is_2m = base.size() > 3 && base.compare(base.size() - 3, 3, "-2m") == 0;
  if (is_2m) base.resize(base.size() - 3);
  MemorySystem sibling;
  std::string err;
  const bool want_2m = page == kHugePage;
  if (want_2m == is_2m) return tier.migration_bw_gbps;
  if (memory_system_preset(want_2m ? base + "-2m" : base, &sibling, &err)) return sibling.migration_bw_gbps;
  return tier.migration_bw_gbps;
}

}  // namespace

int calibrate_migration(const MemorySystem& tier, const CalibrateOptions& opt) {
  const size_t bytes = opt.migrate_mib << 20;
  const double small = published_gbps(tier, kSmallPage), huge = published_gbps(tier, kHugePage);
  MigrationRow rows[] = {{"4 KiB pages n1 -> n0", Mover::kMovePages, kSmallPage, 1, 0, small},
                         {"4 KiB pages n0 -> n1", Mover::kMovePages, kSmallPage, 0, 1, small},
                         {"4 KiB pages n1 -> n1", Mover::kMovePages, kSmallPage, 1, 1, 0},
                         {"4 KiB mbind n1 -> n0", Mover::kMbind, kSmallPage, 1, 0, small},
                         {"4 KiB mbind n0 -> n1", Mover::kMbind, kSmallPage, 0, 1, small},
                         {"2 MiB pages n1 -> n0", Mover::kMovePages, kHugePage, 1, 0, huge},
                         {"2 MiB pages n0 -> n1", Mover::kMovePages, kHugePage, 0, 1, huge}};
  const int mover_cpu = measuring_cpu();
  const int other_cpu = mover_cpu == 0 ? 0 : mover_cpu - 1;
  pin_to_cpu(mover_cpu);
  // The fixed cost of one move_pages call (its setup: lru_cache_disable's expedited RCU grace period and
  // LRU drain on every CPU, the page-table walk's start, the TLB shootdown): 1 MiB moved one page per
  // call, against the same bytes in batches of 512 (row 0). The planner charges it per object moved.
  constexpr size_t kPerCallBytes = 1u << 20;
  Measured per_call;
  bool per_call_ran = false;
  {
    void* buf = alloc_on_node(kPerCallBytes, 1, false);
    if (buf == nullptr) return 1;
    per_call_ran = measure_on_own_vcpu([&] { move_all(buf, kPerCallBytes, kSmallPage, 0, 1); }, &per_call);
    free_on_node(buf, kPerCallBytes);
  }
  for (MigrationRow& r : rows) {
    const uint64_t huge_before = anon_huge_kb();
    void* buf = alloc_on_node(bytes, r.from, r.page == kHugePage);
    if (buf == nullptr) return 1;
    const bool huge_backed = anon_huge_kb() - huge_before >= (bytes >> 10) / 2;
    if (r.page == kHugePage && !huge_backed) {
      std::printf("%s: the kernel backed the buffer with small pages (THP off?): row skipped\n", r.name);
      free_on_node(buf, bytes);
      continue;
    }
    const bool ok = measure_on_own_vcpu([&] {
      r.misplaced = r.mover == Mover::kMbind ? mbind_all(buf, bytes, r.to) : move_all(buf, bytes, r.page, r.to);
    }, &r.m);
    if (!ok) return 1;
    r.ran = true;
    free_on_node(buf, bytes);
  }

  std::printf("migration: %zu MiB per row, move_pages in batches of %zu pages, on vCPU %d's clock\n",
              opt.migrate_mib, kBatchPages, mover_cpu);
  std::printf("%-21s %11s %7s %9s | per 4 KiB: %6s %6s %6s %6s %6s %8s %8s %6s %6s %6s\n", "row", "virt ns",
              "GB/s", "preset", "kinsn", "uinsn", "string", "mover", "other", "miss n0", "miss n1", "strm %",
              "wb n0", "wb n1");
  int failures = 0;
  const double units = static_cast<double>(bytes / kSmallPage);
  for (const MigrationRow& r : rows) {
    if (!r.ran) continue;
    const Counters& d = r.m.d;
    const double ns = r.m.virtual_ns;
    const uint64_t m0 = d.fast_read_misses + d.fast_write_misses, m1 = d.slow_read_misses + d.slow_write_misses;
    const uint64_t streamed = d.fast_streamed_misses + d.slow_streamed_misses;
    const uint64_t read_lines = d.fast_read_misses + d.slow_read_misses;
    char published[16] = "-";
    if (r.published_gbps > 0) std::snprintf(published, sizeof published, "%.2f", r.published_gbps);
    std::printf("%-21s %11.0f %7.2f %9s | %16.0f %6.0f %6.0f %6.0f %6.0f %8.1f %8.1f %6.0f %6.1f %6.1f\n", r.name,
                ns, bytes / ns, published, d.kernel_instructions / units,
                (d.instructions - d.kernel_instructions) / units, d.string_elements / units,
                d.vcpu_instructions[mover_cpu] / units, d.vcpu_instructions[other_cpu] / units, m0 / units, m1 / units,
                read_lines ? 100.0 * streamed / read_lines : 0.0, d.fast_writebacks / units,
                d.slow_writebacks / units);
    if (!opt.check) continue;
    // Direction, not timing: every page on the target, and the copy's traffic seen on both nodes
    // (the source's lines read from `from`, at least 90% of one per line).
    const uint64_t lines = bytes / 64;
    const uint64_t from_misses = r.from == 0 ? m0 : m1;
    if (r.misplaced != 0) {
      std::printf("CHECK FAILED: %s: %zu pages not on node %d\n", r.name, r.misplaced, r.to);
      ++failures;
    }
    if (r.from != r.to && (from_misses < lines * 9 / 10 || !(ns > 0))) {
      std::printf("CHECK FAILED: %s: the copy's reads of node %d were not counted\n", r.name, r.from);
      ++failures;
    }
  }
  if (per_call_ran && rows[0].ran) {
    const double calls = static_cast<double>(kPerCallBytes / kSmallPage);
    const double batched_ns = rows[0].m.virtual_ns * static_cast<double>(kPerCallBytes) / static_cast<double>(bytes);
    std::printf("move_pages setup per call: %.1f virt us (1 MiB one page per call n1 -> n0: %.0f virt ns, "
                "in batches of %zu: %.0f; preset %.1f us)\n",
                (per_call.virtual_ns - batched_ns) / calls / 1e3, per_call.virtual_ns, kBatchPages, batched_ns,
                tier.migration_setup_ns / 1e3);
  }
  std::printf("kinsn/uinsn: kernel/user instructions (string elements included); string: rep movs/stos "
              "elements; mover/other: instructions of the moving thread's vCPU and of another; miss: lines missed per node; "
              "strm %%: read misses a stream prefetcher covers; wb: write-backs\n");

  // A compute thread on the measuring vCPU and a mover on another vCPU, together and each alone. The
  // compute thread runs as many 1 M-iteration chunks as it takes the mover to finish two whole moves
  // of 8 MiB; alone it runs the same chunks. Two figures: how much the mover slows the compute
  // thread (its own clock), and whether the two ran at the same time in virtual time (the machine's
  // clock for both together against the longer of the two alone; vcpu_sync.h keeps the vCPUs' clocks
  // in step, without it one runs ahead).
  constexpr uint64_t kChunk = 1'000'000;
  const size_t moved = std::min<size_t>(bytes, 8u << 20);  // host time: TCG moves a page in ~100 us
  void* buf = alloc_on_node(moved, 1, false);
  if (buf == nullptr) return failures + 1;
  std::atomic<uint64_t> moves{0};
  uint64_t chunks = 0;
  double compute_together = 0, compute_alone = 0;
  bool ok = true;
  Counters t0, t1;
  ok = read_or_complain(&t0);
  std::thread compute([&] {
    pin_to_cpu(mover_cpu);
    while (ok && moves.load() < 2) {
      double ns = 0;
      ok = compute_loop_virtual_ns(kChunk, &ns);
      compute_together += ns;
      ++chunks;
    }
  });
  pin_to_cpu(other_cpu);
  for (int to = 0; moves.load() < 2; to ^= 1) {
    move_all(buf, moved, kSmallPage, to);
    moves.fetch_add(1);
  }
  compute.join();
  ok = ok && read_or_complain(&t1);
  Counters m0, m1;  // the mover alone, on the machine's clock
  ok = ok && read_or_complain(&m0);
  for (int to = 0; to < 2; ++to) move_all(buf, moved, kSmallPage, to);
  ok = ok && read_or_complain(&m1);
  free_on_node(buf, moved);
  double compute_alone_machine = 0;
  std::thread([&] {
    pin_to_cpu(mover_cpu);
    Counters a, b;
    ok = ok && read_or_complain(&a);
    for (uint64_t i = 0; ok && i < chunks; ++i) {
      double ns = 0;
      ok = compute_loop_virtual_ns(kChunk, &ns);
      compute_alone += ns;
    }
    ok = ok && read_or_complain(&b);
    compute_alone_machine = static_cast<double>(b.virtual_ns - a.virtual_ns);
  }).join();
  pin_to_cpu(mover_cpu);
  if (!ok) return failures + 1;
  const double together = static_cast<double>(t1.virtual_ns - t0.virtual_ns);
  const double mover_alone = static_cast<double>(m1.virtual_ns - m0.virtual_ns);
  std::printf("compute thread (vCPU %d, %llu M iterations): alone %.0f virt ns, while vCPU %d moves %zu MiB "
              "twice %.0f virt ns: %.3fx\n",
              mover_cpu, static_cast<unsigned long long>(chunks), compute_alone, other_cpu, moved >> 20,
              compute_together, compute_together / compute_alone);
  std::printf("concurrency (machine clock): both together %.0f virt ns, compute alone %.0f, mover alone %.0f: "
              "together / longer alone %.3f\n",
              together, compute_alone_machine, mover_alone, together / std::max(compute_alone_machine, mover_alone));
  return failures;
}

}  // namespace sentinel::slowtier
