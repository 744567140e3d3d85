// `sentinel topology`: prints every NUMA node (size, free, CPUs, distances, memory tier, HMAT, dax
// devices onlined on it by dax kmem) and which node is taken as fast and as slow, and why. Reads SENTINEL_FAST_NODE / SENTINEL_SLOW_NODE /
// SENTINEL_SYSFS_ROOT like the runtime does; options override them. Exit status: 0 ok, 1 detection
// failed (e.g. an invalid override), 2 usage error.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "core/config.h"
#include "topo/sysfs.h"
#include "topo/topology.h"

namespace sentinel::cli {
namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

nlohmann::json to_json(const topo::Topology& t) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : t.nodes) {
    nlohmann::json j = {{"id", n.id},
                        {"total_bytes", n.total_bytes},
                        {"free_bytes", n.free_bytes},
                        {"cpus", n.cpus},
                        {"distances", n.distances},
                        {"memory_tier", n.memory_tier},
                        {"dax_kmem", n.dax_kmem}};
    if (n.hmat.present)
      j["hmat"] = {{"read_latency_ns", n.hmat.read_latency_ns},
                   {"write_latency_ns", n.hmat.write_latency_ns},
                   {"read_bandwidth_mbps", n.hmat.read_bandwidth_mbps},
                   {"write_bandwidth_mbps", n.hmat.write_bandwidth_mbps}};
    nodes.push_back(j);
  }
  return {{"nodes", nodes},          {"fast_node", t.fast_node}, {"slow_node", t.slow_node},
          {"tiered", t.tiered()},    {"reason", t.reason},       {"source", t.source}};
}

void print_text(const topo::Topology& t) {
  std::printf("%-5s %12s %12s %-10s %-5s %-16s %-10s %s\n", "node", "size", "free", "cpus", "tier",
              "hmat(rd ns/MBps)", "dax kmem", "distances");
  for (const auto& n : t.nodes) {
    std::string dist;
    for (size_t i = 0; i < n.distances.size(); ++i) dist += (i ? " " : "") + std::to_string(n.distances[i]);
    std::string hmat = n.hmat.present ? std::to_string(n.hmat.read_latency_ns) + "/" +
                                            std::to_string(n.hmat.read_bandwidth_mbps)
                                      : "-";
    std::string cpus = n.cpus.empty() ? "-" : topo::format_id_list(n.cpus);
    std::string tier = n.memory_tier >= 0 ? std::to_string(n.memory_tier) : "-";
    std::printf("%-5d %12s %12s %-10s %-5s %-16s %-10s %s\n", n.id, mib(n.total_bytes).c_str(),
                mib(n.free_bytes).c_str(), cpus.c_str(), tier.c_str(), hmat.c_str(),
                n.dax_kmem.empty() ? "-" : n.dax_kmem.c_str(), dist.c_str());
  }
  std::printf("fast node: %d\n", t.fast_node);
  if (t.tiered())
    std::printf("slow node: %d\n", t.slow_node);
  else
    std::printf("slow node: none\n");
  std::printf("why: %s\n", t.reason.c_str());
  std::printf("source: %s\n", t.source.c_str());
}

int run_topology(const topo::TopologyOptions& options, bool json) {
  topo::Topology t;
  std::string error;
  if (!topo::detect_topology(options, &t, &error)) {
    if (json) std::printf("%s\n", nlohmann::json({{"error", error}}).dump(2).c_str());
    std::fprintf(stderr, "sentinel topology: %s\n", error.c_str());
    return 1;
  }
  if (json)
    std::printf("%s\n", to_json(t).dump(2).c_str());
  else
    print_text(t);
  return 0;
}

}  // namespace

void add_topology_command(CLI::App& app, int* rc) {
  struct Options {
    bool json = false;
    std::string fast, slow, sysfs_root;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("topology", "show the NUMA nodes and the fast/slow choice");
  cmd->add_flag("--json", o->json, "machine-readable output");
  cmd->add_option("--fast", o->fast, "override the fast node (default: $SENTINEL_FAST_NODE, else automatic)")
      ->type_name("N");
  cmd->add_option("--slow", o->slow, "override the slow node (default: $SENTINEL_SLOW_NODE, else automatic)")
      ->type_name("N");
  cmd->add_option("--sysfs-root", o->sysfs_root, "read the node tree from DIR instead of /sys ($SENTINEL_SYSFS_ROOT)")
      ->type_name("DIR");
  cmd->footer("Prints the NUMA nodes and which node is taken as the fast (DRAM) and the slow tier, and why.");
  cmd->callback([o, rc] {
    Config config;
    if (const Status parsed = parse_config_from_environ(&config); !parsed.is_ok()) {
      std::fprintf(stderr, "%s\n", parsed.message());
      *rc = 2;
      return;
    }
    topo::TopologyOptions options = topo::options_from_config(config);
    if (!o->fast.empty()) options.fast_override = o->fast;
    if (!o->slow.empty()) options.slow_override = o->slow;
    if (!o->sysfs_root.empty()) options.sysfs_root = o->sysfs_root;
    *rc = run_topology(options, o->json);
  });
}

}  // namespace sentinel::cli
