#include "topo/topology.h"

#include <numa.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "topo/sysfs.h"

namespace sentinel::topo {

const NodeInfo* Topology::node(int id) const {
  for (const auto& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

int Topology::distance(int from, int to) const {
  const NodeInfo* f = node(from);
  if (f == nullptr) return -1;
  for (size_t i = 0; i < nodes.size() && i < f->distances.size(); ++i)
    if (nodes[i].id == to) return f->distances[i];
  return -1;
}

static void read_memory_tiers(const std::string& root, std::vector<NodeInfo>* nodes) {
  const std::string dir = root + "/devices/virtual/memory_tiering";
  for (const auto& name : list_dir(dir)) {
    const std::string prefix = "memory_tier";
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) continue;
    char* end = nullptr;
    long tier = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (*end != '\0') continue;
    auto text = read_text(dir + "/" + name + "/nodelist");
    std::vector<int> ids;
    if (!text || !parse_id_list(*text, &ids)) continue;
    for (auto& n : *nodes)
      if (std::find(ids.begin(), ids.end(), n.id) != ids.end()) n.memory_tier = static_cast<int>(tier);
  }
}

// Dax devices bound to the kmem driver (bus/dax/drivers/kmem/daxX.Y links to the device), by their
// target_node: the memory Linux onlined from PMem or CXL devices as system RAM.
static void read_dax_kmem(const std::string& root, std::vector<NodeInfo>* nodes) {
  const std::string dir = root + "/bus/dax/drivers/kmem";
  for (const auto& name : list_dir(dir)) {
    if (name.rfind("dax", 0) != 0) continue;
    auto node = read_u64(dir + "/" + name + "/target_node");
    if (!node) continue;
    for (auto& n : *nodes)
      if (n.id == static_cast<int>(*node)) n.dax_kmem += (n.dax_kmem.empty() ? "" : ",") + name;
  }
}

bool read_nodes(const std::string& root, std::vector<NodeInfo>* nodes, std::string* error) {
  nodes->clear();
  const std::string base = root + "/devices/system/node";
  std::vector<int> ids;
  auto online = read_text(base + "/online");
  if (!online || !parse_id_list(*online, &ids) || ids.empty()) {
    // Older or partial trees: fall back to the nodeN directories.
    for (const auto& name : list_dir(base)) {
      if (name.size() > 4 && name.rfind("node", 0) == 0 &&
          name.find_first_not_of("0123456789", 4) == std::string::npos)
        ids.push_back(std::atoi(name.c_str() + 4));
    }
    std::sort(ids.begin(), ids.end());
  }
  if (ids.empty()) {
    *error = "no NUMA nodes under " + base;
    return false;
  }
  for (int id : ids) {
    NodeInfo n;
    n.id = id;
    const std::string dir = base + "/node" + std::to_string(id);
    // Every online node has these three files. One that cannot be read (EIO, EMFILE, ...) must not be
    // taken as "no memory" or "no CPUs": that could make the slow node look fast. Fail instead.
    auto mi = read_text(dir + "/meminfo");
    auto cl = read_text(dir + "/cpulist");
    auto dist = read_text(dir + "/distance");
    if (!mi || !cl || !dist) {
      *error = "cannot read " + dir + "/" + (!mi ? "meminfo" : !cl ? "cpulist" : "distance");
      nodes->clear();
      return false;
    }
    n.total_bytes = meminfo_bytes(*mi, "MemTotal").value_or(0);
    n.free_bytes = meminfo_bytes(*mi, "MemFree").value_or(0);
    parse_id_list(*cl, &n.cpus);
    {
      std::stringstream ss(*dist);
      int d;
      while (ss >> d) n.distances.push_back(d);
    }
    const std::string acc = dir + "/access0/initiators";
    auto rl = read_u64(acc + "/read_latency");
    auto wl = read_u64(acc + "/write_latency");
    auto rb = read_u64(acc + "/read_bandwidth");
    auto wb = read_u64(acc + "/write_bandwidth");
    if (rl || wl || rb || wb) {
      n.hmat.present = true;
      n.hmat.read_latency_ns = rl.value_or(0);
      n.hmat.write_latency_ns = wl.value_or(0);
      n.hmat.read_bandwidth_mbps = rb.value_or(0);
      n.hmat.write_bandwidth_mbps = wb.value_or(0);
    }
    nodes->push_back(std::move(n));
  }
  read_memory_tiers(root, nodes);
  read_dax_kmem(root, nodes);
  return true;
}

namespace {

// Strict non-negative integer; rejects "", "1x", "-1", "+1".
bool parse_node(const std::string& s, int* out) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::atoi(s.c_str());
  return true;
}

bool check_override(const Topology& t, const char* what, const std::string& value, int* out,
                    std::string* error) {
  if (!parse_node(value, out)) {
    *error = std::string(what) + "='" + value + "' is not a node number";
    return false;
  }
  const NodeInfo* n = t.node(*out);
  if (n == nullptr) {
    *error = std::string(what) + "=" + value + ": no such node";
    return false;
  }
  if (!n->has_memory()) {
    *error = std::string(what) + "=" + value + ": node has no memory";
    return false;
  }
  return true;
}

// Tier numbers are comparable only when both are known; unknown counts as "same".
int tier_cmp(const NodeInfo& a, const NodeInfo& b) {
  if (a.memory_tier < 0 || b.memory_tier < 0) return 0;
  return (a.memory_tier > b.memory_tier) - (a.memory_tier < b.memory_tier);
}

int pick_fast(const Topology& t, int exclude) {
  const NodeInfo* best = nullptr;
  auto better = [](const NodeInfo& a, const NodeInfo& b) {  // a faster than b?
    if (a.has_cpus() != b.has_cpus()) return a.has_cpus();
    if (int c = tier_cmp(a, b)) return c < 0;
    if (a.hmat.read_latency_ns && b.hmat.read_latency_ns && a.hmat.read_latency_ns != b.hmat.read_latency_ns)
      return a.hmat.read_latency_ns < b.hmat.read_latency_ns;
    return a.id < b.id;
  };
  for (const auto& n : t.nodes)
    if (n.has_memory() && n.id != exclude && (best == nullptr || better(n, *best))) best = &n;
  return best ? best->id : -1;
}

// Evidence that `c` is slower than `f`; returns a score and appends the reasons.
int slow_evidence(const Topology& t, const NodeInfo& c, const NodeInfo& f, std::string* why) {
  int score = 0;
  auto add = [&](int s, const std::string& text) {
    score += s;
    *why += (why->empty() ? "" : "; ") + text;
  };
  if (tier_cmp(c, f) > 0) {
    add(16, "the kernel's memory tiers put it in memory_tier" + std::to_string(c.memory_tier) +
                " below node " + std::to_string(f.id) + "'s memory_tier" + std::to_string(f.memory_tier) +
                (c.dax_kmem.empty() ? "" : " (" + c.dax_kmem + " onlined by dax kmem)"));
  } else if (!c.dax_kmem.empty()) {
    add(4, c.dax_kmem + " onlined by dax kmem");
  } else if (c.memory_tier >= 0 && c.memory_tier == f.memory_tier) {
    add(0, "memory_tier" + std::to_string(c.memory_tier) + " like node " + std::to_string(f.id) +
               " (the kernel does not tier them)");
  }
  if (!c.has_cpus()) add(8, "no CPUs (memory-only node, like CXL or PMem)");
  if (c.hmat.read_latency_ns && f.hmat.read_latency_ns && c.hmat.read_latency_ns > f.hmat.read_latency_ns)
    add(2, "HMAT read latency " + std::to_string(c.hmat.read_latency_ns) + " ns vs " +
               std::to_string(f.hmat.read_latency_ns) + " ns");
  if (c.hmat.read_bandwidth_mbps && f.hmat.read_bandwidth_mbps &&
      c.hmat.read_bandwidth_mbps < f.hmat.read_bandwidth_mbps)
    add(1, "HMAT read bandwidth " + std::to_string(c.hmat.read_bandwidth_mbps) + " MB/s vs " +
               std::to_string(f.hmat.read_bandwidth_mbps) + " MB/s");
  int d = t.distance(f.id, c.id), local = t.distance(f.id, f.id);
  if (d > 0 && local > 0 && d > local) add(1, "distance " + std::to_string(d) + " from node " + std::to_string(f.id));
  return score;
}

std::string describe_fast(const NodeInfo& f) {
  std::string s = "node " + std::to_string(f.id) + " is fast: ";
  s += f.has_cpus() ? "DRAM with CPUs " + format_id_list(f.cpus) : "memory node (no node has CPUs)";
  if (f.memory_tier >= 0) s += ", memory_tier" + std::to_string(f.memory_tier);
  if (f.hmat.read_latency_ns) s += ", HMAT read latency " + std::to_string(f.hmat.read_latency_ns) + " ns";
  return s;
}

}  // namespace

bool choose_tiers(const TopologyOptions& options, Topology* t, std::string* error) {
  t->fast_node = t->slow_node = -1;
  t->reason.clear();
  int fast = -1, slow = -1;
  if (options.fast_override && !check_override(*t, "SENTINEL_FAST_NODE", *options.fast_override, &fast, error))
    return false;
  if (options.slow_override && !check_override(*t, "SENTINEL_SLOW_NODE", *options.slow_override, &slow, error))
    return false;
  if (fast >= 0 && fast == slow) {
    *error = "SENTINEL_FAST_NODE and SENTINEL_SLOW_NODE name the same node " + std::to_string(fast);
    return false;
  }
  size_t memory_nodes = 0;
  for (const auto& n : t->nodes) memory_nodes += n.has_memory() ? 1 : 0;
  if (memory_nodes == 0) {
    *error = "no NUMA node reports memory";
    return false;
  }
  if (fast < 0) fast = pick_fast(*t, slow);
  if (fast < 0) {
    *error = "no memory node left for the fast tier";
    return false;
  }
  const NodeInfo& f = *t->node(fast);
  t->fast_node = fast;
  std::string fast_reason = options.fast_override ? "node " + std::to_string(fast) + " is fast: SENTINEL_FAST_NODE"
                                                  : describe_fast(f);
  if (memory_nodes == 1) {
    t->reason = "single node: no placement, no migration (" + fast_reason + ")";
    return true;
  }
  std::string slow_reason;
  if (slow >= 0) {
    slow_evidence(*t, *t->node(slow), f, &slow_reason);
    slow_reason = "node " + std::to_string(slow) + " is slow: SENTINEL_SLOW_NODE" +
                  (slow_reason.empty() ? "" : " (" + slow_reason + ")");
  } else {
    // The kernel's tiers first: only nodes of the nearest tier below the fast node's, if there is one.
    int below = -1;
    for (const auto& c : t->nodes)
      if (c.has_memory() && c.id != fast && tier_cmp(c, f) > 0 && (below < 0 || c.memory_tier < below))
        below = c.memory_tier;
    int best_score = -1, best_dist = -1;
    std::string best_why;
    for (const auto& c : t->nodes) {
      if (!c.has_memory() || c.id == fast || (below >= 0 && c.memory_tier != below)) continue;
      std::string why;
      int score = slow_evidence(*t, c, f, &why);
      int dist = t->distance(fast, c.id);
      if (score > best_score || (score == best_score && dist > best_dist)) {
        best_score = score, best_dist = dist, slow = c.id, best_why = why;
      }
    }
    slow_reason = "node " + std::to_string(slow) + " is slow: " +
                  (best_score > 0 ? best_why
                                  : "no sign that it is slower (CPUs, same tier, no HMAT); taken as the other "
                                    "memory node" + (best_why.empty() ? "" : "; " + best_why));
  }
  t->slow_node = slow;
  t->reason = fast_reason + "; " + slow_reason;
  return true;
}

bool detect_topology(const TopologyOptions& options, Topology* t, std::string* error) {
  *t = Topology{};
  if (!read_nodes(options.sysfs_root, &t->nodes, error)) return false;
  t->source = "sysfs (root " + options.sysfs_root + ")";
  if (options.sysfs_root == "/sys") {
    if (numa_available() < 0) {
      t->source += "; libnuma: NUMA not available";
    } else {
      t->source = "sysfs+libnuma";
      // libnuma's figures are live; prefer them and note any disagreement on the node count.
      for (auto& n : t->nodes) {
        long long free_b = 0;
        long long total = numa_node_size64(n.id, &free_b);
        if (total > 0) n.total_bytes = static_cast<uint64_t>(total), n.free_bytes = static_cast<uint64_t>(free_b);
      }
      if (numa_max_node() + 1 < static_cast<int>(t->nodes.size()))
        t->source += " (libnuma sees " + std::to_string(numa_max_node() + 1) + " nodes)";
    }
  }
  return choose_tiers(options, t, error);
}

TopologyOptions options_from_config(const Config& config) {
  TopologyOptions o;
  o.sysfs_root = config.sysfs_root;
  if (config.fast_node >= 0) o.fast_override = std::to_string(config.fast_node);
  if (config.slow_node >= 0) o.slow_override = std::to_string(config.slow_node);
  return o;
}

}  // namespace sentinel::topo
