// The memory kernels of the calibration bench: a pointer chase (latency), streams that a core can
// run at a node's bandwidth (rep movsb into a cached buffer, rep stosb), and plain 8-byte load and
// store loops, each over a buffer on node 0 and then on node 1.
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "calibrate.h"

namespace sentinel::slowtier {
namespace {

struct Sample {
  Counters d{};
  double virtual_ns = 0;  // of the measuring vCPU
  double host_ns = 0;
  uint64_t misses(int node) const {
    return node == 0 ? d.fast_read_misses + d.fast_write_misses : d.slow_read_misses + d.slow_write_misses;
  }
  uint64_t streamed(int node) const { return node == 0 ? d.fast_streamed_misses : d.slow_streamed_misses; }
};

template <typename F>
bool measure(F&& kernel, Sample* out) {
  Measured m;
  std::chrono::steady_clock::time_point t0, t1;
  const bool ok = measure_on_own_vcpu([&] {
    t0 = std::chrono::steady_clock::now();
    kernel();
    t1 = std::chrono::steady_clock::now();
  }, &m);
  if (!ok) std::fprintf(stderr, "sentinel-slowtier: a kernel was not measured on one vCPU\n");
  out->d = m.d;
  out->virtual_ns = m.virtual_ns;
  out->host_ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  return ok;
}

struct KernelResult {
  const char* name;
  double published_ratio;  // <= 0: none (the kernel is compute-bound by design)
  Sample node[2];
};

void rep_movsb(void* dst, const void* src, size_t n) {
  asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
void rep_stosb(void* dst, int byte, size_t n) {
  asm volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(byte) : "memory");
}

}  // namespace

int calibrate_memory(const MemorySystem& tier, const CalibrateOptions& opt) {
  const size_t bytes = opt.mib << 20;
  const size_t lines = bytes / 64;
  // A random cyclic permutation over the lines (Sattolo), so each visit is a dependent miss.
  std::vector<uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(42);
  for (size_t i = lines - 1; i > 0; --i) std::swap(order[i], order[rng() % i]);
  // The stream read copies into this buffer, which stays in the cache model: only the source misses.
  static char scratch[32 * 1024];

  KernelResult results[] = {
      {"pointer chase", tier.slow.latency_ns / tier.fast.latency_ns, {}},
      {"stream read (rep movsb)", tier.fast.read_bw_gbps / tier.slow.read_bw_gbps, {}},
      {"stream write (rep stosb)", tier.fast.write_bw_gbps / tier.slow.write_bw_gbps, {}},
      {"load loop (8 B)", 0, {}},
      {"store loop (8 B)", 0, {}}};
  volatile uint64_t sink = 0;
  pin_to_cpu(measuring_cpu());
  for (int node = 0; node < 2; ++node) {
    auto* buf = static_cast<uint64_t*>(alloc_on_node(bytes, node, false));
    if (buf == nullptr) return 1;
    for (size_t i = 0; i < lines; ++i) buf[order[i] * 8] = order[(i + 1) % lines] * 8ull;
    bool ok = measure([&] {
      uint64_t at = 0;
      for (size_t i = 0; i < lines; ++i) at = buf[at];
      sink = sink + at;
    }, &results[0].node[node]);
    ok = ok && measure([&] {
      for (size_t off = 0; off < bytes; off += sizeof scratch) rep_movsb(scratch, reinterpret_cast<char*>(buf) + off, sizeof scratch);
      sink = sink + static_cast<uint64_t>(scratch[7]);
    }, &results[1].node[node]);
    ok = ok && measure([&] { rep_stosb(buf, 3, bytes); }, &results[2].node[node]);
    ok = ok && measure([&] {
      uint64_t sum = 0;
      for (size_t i = 0; i < bytes / 8; ++i) sum += buf[i];
      sink = sink + sum;
    }, &results[3].node[node]);
    ok = ok && measure([&] {
      for (size_t i = 0; i < bytes / 8; ++i) buf[i] = i;
      asm volatile("" ::: "memory");
    }, &results[4].node[node]);
    free_on_node(buf, bytes);
    if (!ok) return 1;
  }
  std::printf("memory kernels: %zu MiB per node, %zu lines, on vCPU %d's clock\n", opt.mib, lines, measuring_cpu());
  std::printf("%-25s %11s %11s %6s %9s %7s %7s %6s %15s %11s\n", "kernel", "virt ns n0", "virt ns n1", "ratio",
              "published", "GB/s n0", "GB/s n1", "host", "misses n0/n1", "streamed %");
  int failures = 0;
  for (const KernelResult& r : results) {
    const Sample& a = r.node[0];
    const Sample& b = r.node[1];
    const double va = a.virtual_ns, vb = b.virtual_ns;
    char published[16] = "-";
    if (r.published_ratio > 0) std::snprintf(published, sizeof published, "%.2f", r.published_ratio);
    auto pct = [](uint64_t part, uint64_t whole) { return whole ? 100.0 * part / whole : 0.0; };
    std::printf("%-25s %11.0f %11.0f %6.2f %9s %7.2f %7.2f %6.2f %7llu/%-7llu %5.0f/%-5.0f\n", r.name, va, vb,
                vb / va, published, bytes / va, bytes / vb, b.host_ns / a.host_ns,
                static_cast<unsigned long long>(a.misses(0)), static_cast<unsigned long long>(b.misses(1)),
                pct(a.streamed(0), a.misses(0)), pct(b.streamed(1), b.misses(1)));
    if (!opt.check) continue;
    // Direction: node 1 slower; the node-0 run's misses on node 0 and the node-1 run's on node 1
    // (at least 90% of one miss per line; the rest of the machine adds a few of its own).
    if (!(vb > va)) {
      std::printf("CHECK FAILED: %s: node 1 not slower in virtual time\n", r.name);
      ++failures;
    }
    if (a.misses(0) < lines * 9 / 10 || b.misses(1) < lines * 9 / 10) {
      std::printf("CHECK FAILED: %s: misses not counted on the buffer's node\n", r.name);
      ++failures;
    }
    if (a.misses(1) > lines / 10) {
      std::printf("CHECK FAILED: %s: node-0 run counted %llu node-1 misses\n", r.name,
                  static_cast<unsigned long long>(a.misses(1)));
      ++failures;
    }
  }
  std::printf("ratio = node 1 / node 0 (virtual time); published = slow/fast latency for the chase, fast/slow "
              "bandwidth for the streams; the 8-byte loops are compute-bound at the configured cpi\n");
  return failures;
}

}  // namespace sentinel::slowtier
