// kmem_probe: checks for the guest whose node 1 is dax kmem memory (scripts/numa-guest.sh with
// SENTINEL_GUEST_NODE1=kmem; tests/guest/kmem_tier.sh runs every mode in one boot). Each mode checks
// and exits 1 with the reason on the first failure.
//   kmem_probe topology FILE   FILE is `sentinel topology --json`: node 1 is the slow node, in a
//                              higher memory_tier than node 0, with a dax kmem device, and the reason
//                              names the tiers
//   kmem_probe malloc-node MIB malloc MIB MiB, touch it, and require every page on node 1 (run under
//                              memkind's libmemtier with only a KMEM_DAX tier and no
//                              MEMKIND_DAX_KMEM_NODES: memkind must find the kmem node itself)
//   kmem_probe demote MIB      turn demotion on, fill MIB MiB on node 0 and leave it cold, then bind
//                              node 0's free memory plus MIB MiB to node 0: the kernel must demote the
//                              program's pages to node 1 (a quarter of the overflow at least; vmstat
//                              pgdemote_* counts them), the data intact
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

constexpr size_t kPage = 4096;

int fail(const std::string& why) {
  std::fprintf(stderr, "kmem_probe: %s\n", why.c_str());
  return 1;
}

// Pages of [p, p + bytes) per node (index 0, 1; [2] = not resident or error), from move_pages.
std::vector<size_t> pages_per_node(void* p, size_t bytes) {
  const size_t n = bytes / kPage;
  std::vector<void*> addrs(n);
  std::vector<int> status(n, -1);
  for (size_t i = 0; i < n; ++i) addrs[i] = static_cast<char*>(p) + i * kPage;
  std::vector<size_t> count(3, 0);
  if (numa_move_pages(0, n, addrs.data(), nullptr, status.data(), 0) != 0) {
    count[2] = n;
    return count;
  }
  for (int s : status) ++count[s == 0 || s == 1 ? s : 2];
  return count;
}

uint64_t vmstat(const std::string& key) {
  std::ifstream f("/proc/vmstat");
  std::string k;
  uint64_t v = 0;
  while (f >> k >> v)
    if (k == key) return v;
  return 0;
}

uint64_t demoted_pages() { return vmstat("pgdemote_kswapd") + vmstat("pgdemote_direct"); }

uint64_t node_free_bytes(int node) {
  std::ifstream f("/sys/devices/system/node/node" + std::to_string(node) + "/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string word, key;
    uint64_t kb = 0;
    in >> word >> word >> key >> kb;
    if (key == "MemFree:") return kb * 1024;
  }
  return 0;
}

bool write_file(const char* path, const char* text) {
  FILE* f = std::fopen(path, "we");
  if (f == nullptr) return false;
  const bool ok = std::fputs(text, f) >= 0;
  return std::fclose(f) == 0 && ok;
}

void* map_region(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, bytes, MADV_NOHUGEPAGE);  // small pages: each one demoted on its own, counted exactly
  return p;
}

uint64_t pattern(size_t i) { return i * 0x9e3779b97f4a7c15ull + 1; }

int check_topology(const char* path) {
  std::ifstream f(path);
  auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.contains("nodes") || j["nodes"].size() < 2) return fail(std::string("no topology in ") + path);
  const auto& n0 = j["nodes"][0];
  const auto& n1 = j["nodes"][1];
  const std::string reason = j.value("reason", "");
  if (j.value("slow_node", -1) != 1 || j.value("fast_node", -1) != 0) return fail("fast/slow not 0/1: " + reason);
  if (n0.value("memory_tier", -1) < 0 || n1.value("memory_tier", -1) <= n0.value("memory_tier", -1))
    return fail("node 1 is not in a lower memory tier than node 0: " + j.dump());
  if (n1.value("dax_kmem", "").empty()) return fail("node 1 has no dax kmem device: " + j.dump());
  if (reason.find("the kernel's memory tiers put it in memory_tier") == std::string::npos)
    return fail("the reason does not name the memory tiers: " + reason);
  std::printf("topology: node 1 in memory_tier%d below node 0's memory_tier%d, %s\n", n1.value("memory_tier", -1),
              n0.value("memory_tier", -1), n1.value("dax_kmem", "").c_str());
  return 0;
}

int malloc_node(size_t mib) {
  const size_t bytes = mib << 20;
  // Through malloc, so that an interposed allocator (libmemtier) decides where it lives.
  char* raw = static_cast<char*>(std::malloc(bytes + kPage));
  if (raw == nullptr) return fail("malloc failed");
  char* p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + kPage - 1) & ~(kPage - 1));
  std::memset(p, 7, bytes);
  auto c = pages_per_node(p, bytes);
  std::printf("malloc %zu MiB: %zu pages on node 0, %zu on node 1, %zu unknown\n", mib, c[0], c[1], c[2]);
  // Now, not at exit: libmemtier's destructor purges its arenas before stdio's last flush, and stdout's
  // buffer (malloc'd, so memkind's) would be written out as zeros.
  std::fflush(stdout);
  std::free(raw);
  if (c[1] != bytes / kPage) return fail("not every page is on node 1");
  return 0;
}

int demote(size_t mib) {
  if (!write_file("/sys/kernel/mm/numa/demotion_enabled", "1")) return fail("cannot enable demotion");
  write_file("/proc/sys/kernel/numa_balancing", "0");  // nothing but reclaim moves pages here
  const size_t cold_bytes = mib << 20;
  auto* cold = static_cast<uint64_t*>(map_region(cold_bytes));
  if (cold == nullptr) return fail("cannot map the cold buffer");
  // The default policy: local to the CPU, node 0 (the CPUs' node), while it has room.
  const size_t words = cold_bytes / sizeof(uint64_t);
  for (size_t i = 0; i < words; ++i) cold[i] = pattern(i);
  auto before = pages_per_node(cold, cold_bytes);
  if (before[0] != cold_bytes / kPage) return fail("the cold buffer is not all on node 0 at first");

  // Pressure: node 0's free memory and as much again as the cold buffer, bound to node 0 so that it
  // cannot go to node 1 itself; without demotion (and without swap) the kernel could only kill. The
  // program's pages that end up on node 1 (cold ones, or bound ones, which no allocation puts there)
  // got there by demotion.
  const uint64_t free0 = node_free_bytes(0);
  const size_t hot_bytes = ((free0 + cold_bytes) / kPage) * kPage;
  const uint64_t demoted0 = demoted_pages();
  char* hot = static_cast<char*>(map_region(hot_bytes));
  if (hot == nullptr) return fail("cannot map the pressure buffer");
  unsigned long node0 = 1;
  if (mbind(hot, hot_bytes, MPOL_BIND, &node0, 8 * sizeof node0, 0) != 0) return fail("mbind pressure");
  for (size_t off = 0; off < hot_bytes; off += kPage) hot[off] = static_cast<char>(off / kPage % 127 + 1);
  const uint64_t demoted = demoted_pages() - demoted0;
  auto cold_after = pages_per_node(cold, cold_bytes);
  auto hot_after = pages_per_node(hot, hot_bytes);
  const size_t on_node1 = cold_after[1] + hot_after[1];
  std::printf("demotion: node 0 had %llu MiB free; %zu MiB bound there; %llu pages demoted (pgdemote_*); "
              "the cold %zu MiB: %zu pages on node 0, %zu on node 1; the bound %zu MiB: %zu on node 0, "
              "%zu on node 1\n",
              static_cast<unsigned long long>(free0 >> 20), hot_bytes >> 20, static_cast<unsigned long long>(demoted),
              mib, cold_after[0], cold_after[1], hot_bytes >> 20, hot_after[0], hot_after[1]);
  for (size_t i = 0; i < words; ++i)
    if (cold[i] != pattern(i)) return fail("the cold buffer changed at word " + std::to_string(i));
  for (size_t off = 0; off < hot_bytes; off += kPage)
    if (hot[off] != static_cast<char>(off / kPage % 127 + 1)) return fail("the bound buffer changed");
  munmap(hot, hot_bytes);
  munmap(cold, cold_bytes);
  // The overflow is the cold buffer's size; page cache dropped instead of demoting explains some of it,
  // but at least a quarter of it must be the program's pages moved to node 1.
  const size_t quarter = cold_bytes / kPage / 4;
  if (on_node1 < quarter) return fail("fewer of the program's pages on node 1 than a quarter of the overflow");
  if (demoted < on_node1) return fail("pgdemote_* counted fewer pages than the program has on node 1");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (numa_available() < 0 || numa_max_node() < 1) return fail("needs the two-node guest");
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "topology" && argc == 3) return check_topology(argv[2]);
  const size_t mib = argc == 3 ? std::strtoul(argv[2], nullptr, 10) : 0;
  if (mode == "malloc-node" && mib > 0) return malloc_node(mib);
  if (mode == "demote" && mib > 0) return demote(mib);
  std::fprintf(stderr, "usage: kmem_probe topology FILE | malloc-node MIB | demote MIB\n");
  return 2;
}
