// Helpers shared by the calibration kernels (calibrate.h).
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "calibrate.h"

namespace sentinel::slowtier {

bool read_or_complain(Counters* c) {
  if (sentinel_slowtier_read(c) == 0) return true;
  std::fprintf(stderr, "sentinel-slowtier: no answer from the slow-tier plugin "
                       "(run in scripts/numa-guest.sh with SENTINEL_GUEST_SLOW_TIER set)\n");
  return false;
}

Counters counters_delta(const Counters& before, const Counters& after) {
  static_assert(sizeof(Counters) % sizeof(uint64_t) == 0);
  Counters d = after;
  // Every field but the four 32-bit identifiers is a counter.
  auto sub = [](uint64_t& x, uint64_t y) { x -= y; };
  sub(d.instructions, before.instructions);
  sub(d.virtual_ns, before.virtual_ns);
  sub(d.busy_virtual_ns, before.busy_virtual_ns);
  sub(d.fast_read_misses, before.fast_read_misses);
  sub(d.fast_write_misses, before.fast_write_misses);
  sub(d.slow_read_misses, before.slow_read_misses);
  sub(d.slow_write_misses, before.slow_write_misses);
  sub(d.fast_writebacks, before.fast_writebacks);
  sub(d.slow_writebacks, before.slow_writebacks);
  sub(d.other_ram_accesses, before.other_ram_accesses);
  for (int i = 0; i < SENTINEL_SLOWTIER_MAX_VCPUS; ++i) {
    sub(d.vcpu_virtual_ns[i], before.vcpu_virtual_ns[i]);
    sub(d.vcpu_instructions[i], before.vcpu_instructions[i]);
  }
  sub(d.kernel_instructions, before.kernel_instructions);
  sub(d.string_elements, before.string_elements);
  sub(d.fast_streamed_misses, before.fast_streamed_misses);
  sub(d.slow_streamed_misses, before.slow_streamed_misses);
  sub(d.kernel_fast_misses, before.kernel_fast_misses);
  sub(d.kernel_slow_misses, before.kernel_slow_misses);
  return d;
}

int measuring_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  int last = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) last = cpu;
  }
  return last;
}

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void* alloc_on_node(size_t bytes, int node, bool huge) {
  constexpr size_t kHuge = 2u << 20;
  const size_t mapped = bytes + kHuge;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    std::fprintf(stderr, "sentinel-slowtier: cannot map %zu bytes\n", bytes);
    return nullptr;
  }
  // Keep a 2 MiB-aligned window of `bytes` and give the rest back, so free_on_node can unmap it.
  const uintptr_t lo = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t p = (lo + kHuge - 1) & ~(kHuge - 1);
  if (p > lo) munmap(raw, p - lo);
  const uintptr_t end = lo + mapped;
  if (end > p + bytes) munmap(reinterpret_cast<void*>(p + bytes), end - (p + bytes));
  void* buf = reinterpret_cast<void*>(p);
  madvise(buf, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  unsigned long mask = 1ul << node;
  if (mbind(buf, bytes, MPOL_BIND, &mask, sizeof mask * 8, 0) != 0) {
    std::fprintf(stderr, "sentinel-slowtier: mbind to node %d: %s\n", node, std::strerror(errno));
    munmap(buf, bytes);
    return nullptr;
  }
  std::memset(buf, 1, bytes);
  const size_t pages = bytes / 4096;
  std::vector<void*> addrs(pages);
  std::vector<int> status(pages, -1);
  for (size_t i = 0; i < pages; ++i) addrs[i] = static_cast<char*>(buf) + i * 4096;
  if (numa_move_pages(0, pages, addrs.data(), nullptr, status.data(), 0) != 0) {
    munmap(buf, bytes);
    return nullptr;
  }
  for (int s : status) {
    if (s != node) {
      std::fprintf(stderr, "sentinel-slowtier: a page is on node %d, not %d\n", s, node);
      munmap(buf, bytes);
      return nullptr;
    }
  }
  // The binding stays: it keeps automatic NUMA balancing (on by default in the guest) from moving
  // the buffer to the CPUs' node during a kernel; move_pages and mbind(MPOL_MF_MOVE) override it.
  return buf;
}

void free_on_node(void* p, size_t bytes) { munmap(p, bytes); }

}  // namespace sentinel::slowtier
