// sentinel-slowtier: runs inside the two-node guest with the slow-tier plugin loaded.
//   sentinel-slowtier read              print the counters and the virtual clock as JSON
//   sentinel-slowtier check             mailbox pages on node 0 and node 1 must be answered and
//                                       classified on the right node (verifies the RAM layout)
//   sentinel-slowtier calibrate [--mib N] [--check]
//       pointer chase, stream read and stream write over a buffer on node 0, then on node 1; prints
//       the emulated latency and bandwidth ratios next to the tier model's published ratios.
//       --check exits 1 unless node 1 is slower in virtual time for every kernel and the misses
//       were counted on the buffer's node.
#include <numa.h>
#include <numaif.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "plan/tier_model.h"
#include "sentinel/slowtier.h"

namespace {

using Counters = sentinel_slowtier_counters;

bool read_or_complain(Counters* c) {
  if (sentinel_slowtier_read(c) == 0) return true;
  std::fprintf(stderr, "sentinel-slowtier: no answer from the slow-tier plugin "
                       "(run in scripts/numa-guest.sh with SENTINEL_GUEST_SLOW_TIER set)\n");
  return false;
}

void print_json(const Counters& c) {
  auto u = [](uint64_t x) { return static_cast<unsigned long long>(x); };
  std::printf("{\"instructions\": %llu, \"virtual_ns\": %llu, \"busy_virtual_ns\": %llu, "
              "\"fast_read_misses\": %llu, \"fast_write_misses\": %llu, \"slow_read_misses\": %llu, "
              "\"slow_write_misses\": %llu, \"fast_writebacks\": %llu, \"slow_writebacks\": %llu, "
              "\"other_ram_accesses\": %llu, \"vcpu\": %u, \"n_vcpus\": %u, \"mailbox_node\": %u}\n",
              u(c.instructions), u(c.virtual_ns), u(c.busy_virtual_ns), u(c.fast_read_misses),
              u(c.fast_write_misses), u(c.slow_read_misses), u(c.slow_write_misses),
              u(c.fast_writebacks), u(c.slow_writebacks), u(c.other_ram_accesses), c.vcpu, c.n_vcpus,
              c.mailbox_node);
}

// A buffer whose pages are all on `node` (bound with mbind, touched, then checked page by page).
void* alloc_on_node(size_t bytes, int node) {
  void* p = numa_alloc_onnode(bytes, node);
  if (p == nullptr) return nullptr;
  std::memset(p, 1, bytes);
  size_t pages = bytes / 4096;
  std::vector<void*> addrs(pages);
  std::vector<int> status(pages, -1);
  for (size_t i = 0; i < pages; ++i) addrs[i] = static_cast<char*>(p) + i * 4096;
  if (numa_move_pages(0, pages, addrs.data(), nullptr, status.data(), 0) != 0) return nullptr;
  for (int s : status) {
    if (s != node) {
      std::fprintf(stderr, "sentinel-slowtier: a page is on node %d, not %d\n", s, node);
      return nullptr;
    }
  }
  return p;
}

int check_layout() {
  int rc = 0;
  for (int node = 0; node < 2; ++node) {
    void* page = alloc_on_node(4096, node);
    Counters c;
    if (page == nullptr || sentinel_slowtier_read_with_page(page, &c) != 0) {
      std::fprintf(stderr, "sentinel-slowtier: check: no answer for a mailbox on node %d\n", node);
      rc = 1;
    } else if (c.mailbox_node != static_cast<uint32_t>(node)) {
      std::fprintf(stderr, "sentinel-slowtier: check: mailbox on node %d classified as node %u\n",
                   node, c.mailbox_node);
      rc = 1;
    }
    if (page != nullptr) numa_free(page, 4096);
  }
  if (rc == 0) std::fprintf(stderr, "sentinel-slowtier: layout verified (node 0 and node 1)\n");
  return rc;
}

struct Sample {
  double virtual_ns = 0;
  double host_ns = 0;
  uint64_t misses[2] = {0, 0};  // read + write misses per node
};

template <typename F>
bool measure(F&& kernel, Sample* out) {
  Counters a, b;
  if (!read_or_complain(&a)) return false;
  auto t0 = std::chrono::steady_clock::now();
  kernel();
  auto t1 = std::chrono::steady_clock::now();
  if (!read_or_complain(&b)) return false;
  out->virtual_ns = static_cast<double>(b.virtual_ns - a.virtual_ns);
  out->host_ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  out->misses[0] = (b.fast_read_misses - a.fast_read_misses) + (b.fast_write_misses - a.fast_write_misses);
  out->misses[1] = (b.slow_read_misses - a.slow_read_misses) + (b.slow_write_misses - a.slow_write_misses);
  return true;
}

struct KernelResult {
  const char* name;
  Sample node[2];
  double published_ratio;
};

int calibrate(size_t mib, bool check) {
  const size_t bytes = mib << 20;
  const size_t lines = bytes / 64;
  sentinel::MemorySystem tier;
  std::string err;
  const char* spec = std::getenv("SENTINEL_GUEST_SLOW_TIER");
  if (spec == nullptr || !sentinel::resolve_memory_system(spec, &tier, &err)) {
    std::fprintf(stderr, "sentinel-slowtier: cannot resolve SENTINEL_GUEST_SLOW_TIER=%s %s\n",
                 spec ? spec : "(unset)", err.c_str());
    return 2;
  }
  // A random cyclic permutation over the lines (Sattolo), so each visit is a dependent miss.
  std::vector<uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(42);
  for (size_t i = lines - 1; i > 0; --i) std::swap(order[i], order[rng() % i]);

  KernelResult results[3] = {
      {"pointer chase", {}, tier.slow.latency_ns / tier.fast.latency_ns},
      {"stream read", {}, tier.fast.read_bw_gbps / tier.slow.read_bw_gbps},
      {"stream write", {}, tier.fast.write_bw_gbps / tier.slow.write_bw_gbps}};
  volatile uint64_t sink = 0;
  for (int node = 0; node < 2; ++node) {
    auto* buf = static_cast<uint64_t*>(alloc_on_node(bytes, node));
    if (buf == nullptr) {
      std::fprintf(stderr, "sentinel-slowtier: cannot place %zu MiB on node %d\n", mib, node);
      return 2;
    }
    for (size_t i = 0; i < lines; ++i) buf[order[i] * 8] = order[(i + 1) % lines] * 8ull;
    bool ok = measure([&] {
      uint64_t at = 0;
      for (size_t i = 0; i < lines; ++i) at = buf[at];
      sink = sink + at;
    }, &results[0].node[node]);
    ok = ok && measure([&] {
      uint64_t sum = 0;
      for (size_t i = 0; i < bytes / 8; ++i) sum += buf[i];
      sink = sink + sum;
    }, &results[1].node[node]);
    ok = ok && measure([&] {
      for (size_t i = 0; i < bytes / 8; ++i) buf[i] = i;
      asm volatile("" ::: "memory");
    }, &results[2].node[node]);
    numa_free(buf, bytes);
    if (!ok) return 2;
  }
  std::printf("tier: %s\nbuffer: %zu MiB per node, %zu lines\n", sentinel::describe_memory_system(tier).c_str(),
              mib, lines);
  std::printf("%-14s %12s %12s %8s %10s %10s %8s %14s %14s\n", "kernel", "virt ns n0", "virt ns n1",
              "ratio", "host ms n0", "host ms n1", "host", "published", "misses n0/n1");
  int failures = 0;
  for (const KernelResult& r : results) {
    const Sample& a = r.node[0];
    const Sample& b = r.node[1];
    std::printf("%-14s %12.0f %12.0f %8.2f %10.1f %10.1f %8.2f %14.2f %7llu/%-7llu\n", r.name,
                a.virtual_ns, b.virtual_ns, b.virtual_ns / a.virtual_ns, a.host_ns / 1e6,
                b.host_ns / 1e6, b.host_ns / a.host_ns, r.published_ratio,
                static_cast<unsigned long long>(a.misses[0]), static_cast<unsigned long long>(b.misses[1]));
    if (!check) continue;
    // Direction: node 1 slower; the node-0 run's misses on node 0 and the node-1 run's on node 1
    // (at least 90% of one miss per line; the rest of the machine adds a few of its own).
    if (!(b.virtual_ns > a.virtual_ns)) {
      std::printf("CHECK FAILED: %s: node 1 not slower in virtual time\n", r.name);
      ++failures;
    }
    if (a.misses[0] < lines * 9 / 10 || b.misses[1] < lines * 9 / 10) {
      std::printf("CHECK FAILED: %s: misses not counted on the buffer's node\n", r.name);
      ++failures;
    }
    if (a.misses[1] > lines / 10) {
      std::printf("CHECK FAILED: %s: node-0 run counted %llu node-1 misses\n", r.name,
                  static_cast<unsigned long long>(a.misses[1]));
      ++failures;
    }
  }
  std::printf("ratio = node 1 / node 0 (virtual time); published = slow/fast latency for the chase, "
              "fast/slow bandwidth for the streams\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "read") {
    Counters c;
    if (!read_or_complain(&c)) return 1;
    print_json(c);
    return 0;
  }
  if (cmd == "check") return check_layout();
  if (cmd == "calibrate") {
    size_t mib = 64;
    bool check = false;
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "--check") == 0) check = true;
      else if (std::strcmp(argv[i], "--mib") == 0 && i + 1 < argc) mib = std::strtoul(argv[++i], nullptr, 10);
      else return std::fprintf(stderr, "calibrate: unknown argument %s\n", argv[i]), 2;
    }
    if (mib < 4 || mib > 1024) return std::fprintf(stderr, "calibrate: --mib 4..1024\n"), 2;
    if (numa_available() < 0 || numa_max_node() < 1) {
      std::fprintf(stderr, "sentinel-slowtier: needs two NUMA nodes (the guest)\n");
      return 2;
    }
    return calibrate(mib, check);
  }
  std::fprintf(stderr, "usage: sentinel-slowtier read | check | calibrate [--mib N] [--check]\n");
  return 2;
}
