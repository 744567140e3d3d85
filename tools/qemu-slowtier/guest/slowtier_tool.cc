// sentinel-slowtier: runs inside the two-node guest with the slow-tier plugin loaded.
//   sentinel-slowtier read              print the counters and the virtual clock as JSON
//   sentinel-slowtier check             mailbox pages on node 0 and node 1 must be answered and
//                                       classified on the right node (verifies the RAM layout); with
//                                       SENTINEL_GUEST_NODE1=kmem node 1's page must also lie in memory
//                                       the dax kmem driver onlined ("System RAM (kmem)" in /proc/iomem)
//   sentinel-slowtier calibrate [--mib N] [--migrate-mib N] [--check]
//       memory kernels (pointer chase, streams, load and store loops) over a buffer on node 0, then
//       on node 1, and page migration each way with 4 KiB and 2 MiB pages (calibrate.h); prints the
//       emulated ratios and rates next to the tier model's published figures. --check exits 1 unless
//       every direction is right: node 1 slower for every kernel, misses counted on the buffer's
//       node, every migrated page on its target.
#include <fcntl.h>
#include <numa.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "calibrate.h"
#include "plan/tier_model.h"
#include "sentinel/slowtier.h"

namespace {

using sentinel::slowtier::alloc_on_node;
using sentinel::slowtier::CalibrateOptions;
using sentinel::slowtier::Counters;
using sentinel::slowtier::free_on_node;
using sentinel::slowtier::read_or_complain;

void print_json(const Counters& c) {
  auto u = [](uint64_t x) { return static_cast<unsigned long long>(x); };
  std::printf("{\"instructions\": %llu, \"virtual_ns\": %llu, \"busy_virtual_ns\": %llu, "
              "\"fast_read_misses\": %llu, \"fast_write_misses\": %llu, \"slow_read_misses\": %llu, "
              "\"slow_write_misses\": %llu, \"fast_writebacks\": %llu, \"slow_writebacks\": %llu, "
              "\"other_ram_accesses\": %llu, \"kernel_instructions\": %llu, \"string_elements\": %llu, "
              "\"fast_streamed_misses\": %llu, \"slow_streamed_misses\": %llu, \"kernel_fast_misses\": %llu, "
              "\"kernel_slow_misses\": %llu, \"vcpu\": %u, \"n_vcpus\": %u, \"mailbox_node\": %u}\n",
              u(c.instructions), u(c.virtual_ns), u(c.busy_virtual_ns), u(c.fast_read_misses),
              u(c.fast_write_misses), u(c.slow_read_misses), u(c.slow_write_misses),
              u(c.fast_writebacks), u(c.slow_writebacks), u(c.other_ram_accesses), u(c.kernel_instructions),
              u(c.string_elements), u(c.fast_streamed_misses), u(c.slow_streamed_misses),
              u(c.kernel_fast_misses), u(c.kernel_slow_misses), c.vcpu, c.n_vcpus, c.mailbox_node);
}

// Physical address of a resident page (root: /proc/self/pagemap shows frame numbers); 0 if unknown.
uint64_t physical_address(const void* page) {
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t entry = 0;
  const off_t at = static_cast<off_t>(reinterpret_cast<uintptr_t>(page) / 4096 * sizeof entry);
  const bool ok = pread(fd, &entry, sizeof entry, at) == static_cast<ssize_t>(sizeof entry);
  close(fd);
  const uint64_t pfn = entry & ((uint64_t{1} << 55) - 1);
  return ok && (entry >> 63) != 0 && pfn != 0 ? pfn * 4096 : 0;
}

// Whether `phys` lies in a "System RAM (kmem)" range of /proc/iomem: memory the dax kmem driver added.
bool in_kmem_ram(uint64_t phys) {
  FILE* f = std::fopen("/proc/iomem", "re");
  if (f == nullptr) return false;
  char line[256];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f) != nullptr) {
    uint64_t lo = 0, hi = 0;
    if (std::strstr(line, "System RAM (kmem)") != nullptr &&
        std::sscanf(line, " %" SCNx64 "-%" SCNx64, &lo, &hi) == 2)
      found = phys >= lo && phys <= hi;
  }
  std::fclose(f);
  return found;
}

int check_layout() {
  const char* kind = std::getenv("SENTINEL_GUEST_NODE1");
  const bool kmem = kind != nullptr && std::strcmp(kind, "kmem") == 0;
  int rc = 0;
  uint64_t node1_phys = 0;
  for (int node = 0; node < 2; ++node) {
    void* page = alloc_on_node(4096, node, false);
    Counters c;
    if (page == nullptr || sentinel_slowtier_read_with_page(page, &c) != 0) {
      std::fprintf(stderr, "sentinel-slowtier: check: no answer for a mailbox on node %d\n", node);
      rc = 1;
    } else if (c.mailbox_node != static_cast<uint32_t>(node)) {
      std::fprintf(stderr, "sentinel-slowtier: check: mailbox on node %d classified as node %u\n",
                   node, c.mailbox_node);
      rc = 1;
    } else if (node == 1 && kmem) {
      // The plugin found the cookie where the kmem layout puts this page; the page must also be
      // memory of the NVDIMM that dax kmem onlined, not node-1 memory from anywhere else.
      node1_phys = physical_address(page);
      if (node1_phys == 0 || !in_kmem_ram(node1_phys)) {
        std::fprintf(stderr, "sentinel-slowtier: check: node 1's mailbox page (physical 0x%" PRIx64
                     ") is not in dax kmem memory (/proc/iomem \"System RAM (kmem)\")\n", node1_phys);
        rc = 1;
      }
    }
    if (page != nullptr) free_on_node(page, 4096);
  }
  if (rc == 0 && kmem) {
    std::fprintf(stderr, "sentinel-slowtier: layout verified (node 0, and node 1 as dax kmem memory: "
                 "physical 0x%" PRIx64 ")\n", node1_phys);
  } else if (rc == 0) {
    std::fprintf(stderr, "sentinel-slowtier: layout verified (node 0 and node 1)\n");
  }
  return rc;
}

int calibrate(const CalibrateOptions& opt) {
  sentinel::MemorySystem tier;
  std::string err;
  const char* spec = std::getenv("SENTINEL_GUEST_SLOW_TIER");
  if (spec == nullptr || !sentinel::resolve_memory_system(spec, &tier, &err)) {
    std::fprintf(stderr, "sentinel-slowtier: cannot resolve SENTINEL_GUEST_SLOW_TIER=%s %s\n",
                 spec ? spec : "(unset)", err.c_str());
    return 2;
  }
  std::printf("tier: %s\n", sentinel::describe_memory_system(tier).c_str());
  int failures = sentinel::slowtier::calibrate_memory(tier, opt);
  std::printf("\n");
  failures += sentinel::slowtier::calibrate_migration(tier, opt);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured, also through a pipe
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "read") {
    Counters c;
    if (!read_or_complain(&c)) return 1;
    print_json(c);
    return 0;
  }
  if (cmd == "check") return check_layout();
  if (cmd == "calibrate") {
    CalibrateOptions opt;
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "--check") == 0) opt.check = true;
      else if (std::strcmp(argv[i], "--mib") == 0 && i + 1 < argc) opt.mib = std::strtoul(argv[++i], nullptr, 10);
      else if (std::strcmp(argv[i], "--migrate-mib") == 0 && i + 1 < argc) opt.migrate_mib = std::strtoul(argv[++i], nullptr, 10);
      else return std::fprintf(stderr, "calibrate: unknown argument %s\n", argv[i]), 2;
    }
    if (opt.mib < 4 || opt.mib > 1024) return std::fprintf(stderr, "calibrate: --mib 4..1024\n"), 2;
    if (opt.migrate_mib < 4 || opt.migrate_mib > 1024 || opt.migrate_mib % 2 != 0) {
      return std::fprintf(stderr, "calibrate: --migrate-mib an even number 4..1024\n"), 2;
    }
    if (numa_available() < 0 || numa_max_node() < 1) {
      std::fprintf(stderr, "sentinel-slowtier: needs two NUMA nodes (the guest)\n");
      return 2;
    }
    return calibrate(opt);
  }
  std::fprintf(stderr, "usage: sentinel-slowtier read | check | calibrate [--mib N] [--migrate-mib N] [--check]\n");
  return 2;
}
