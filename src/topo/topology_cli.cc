#include "topo/topology_cli.h"

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "topo/sysfs.h"
#include "topo/topology.h"

namespace sentinel::cli {

namespace {

void usage(FILE* out) {
  std::fputs(
      "usage: sentinel topology [--json] [--fast N] [--slow N] [--sysfs-root DIR]\n"
      "Prints the NUMA nodes and which node is taken as the fast (DRAM) and the slow tier, and why.\n"
      "  --json            machine-readable output\n"
      "  --fast N          override the fast node (default: $SENTINEL_FAST_NODE, else automatic)\n"
      "  --slow N          override the slow node (default: $SENTINEL_SLOW_NODE, else automatic)\n"
      "  --sysfs-root DIR  read the node tree from DIR instead of /sys ($SENTINEL_SYSFS_ROOT)\n",
      out);
}

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

nlohmann::json to_json(const topo::Topology& t) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : t.nodes) {
    nlohmann::json j = {{"id", n.id},
                        {"total_bytes", n.total_bytes},
                        {"free_bytes", n.free_bytes},
                        {"cpus", n.cpus},
                        {"distances", n.distances},
                        {"memory_tier", n.memory_tier}};
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
  std::printf("%-5s %12s %12s %-10s %-5s %-14s %s\n", "node", "size", "free", "cpus", "tier", "hmat(rd ns/MBps)",
              "distances");
  for (const auto& n : t.nodes) {
    std::string dist;
    for (size_t i = 0; i < n.distances.size(); ++i) dist += (i ? " " : "") + std::to_string(n.distances[i]);
    std::string hmat = n.hmat.present ? std::to_string(n.hmat.read_latency_ns) + "/" +
                                            std::to_string(n.hmat.read_bandwidth_mbps)
                                      : "-";
    std::string cpus = n.cpus.empty() ? "-" : topo::format_id_list(n.cpus);
    std::string tier = n.memory_tier >= 0 ? std::to_string(n.memory_tier) : "-";
    std::printf("%-5d %12s %12s %-10s %-5s %-16s %s\n", n.id, mib(n.total_bytes).c_str(), mib(n.free_bytes).c_str(),
                cpus.c_str(), tier.c_str(), hmat.c_str(), dist.c_str());
  }
  std::printf("fast node: %d\n", t.fast_node);
  if (t.tiered())
    std::printf("slow node: %d\n", t.slow_node);
  else
    std::printf("slow node: none\n");
  std::printf("why: %s\n", t.reason.c_str());
  std::printf("source: %s\n", t.source.c_str());
}

}  // namespace

int topology_main(int argc, char** argv) {
  Config config;
  char message[512];
  if (!parse_config_from_environ(&config, message, sizeof message)) {
    std::fprintf(stderr, "%s\n", message);
    return 2;
  }
  topo::TopologyOptions options = topo::options_from_config(config);
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sentinel topology: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!std::strcmp(a, "--json")) {
      json = true;
    } else if (!std::strcmp(a, "--fast") || !std::strcmp(a, "--slow") || !std::strcmp(a, "--sysfs-root")) {
      const char* v = value(a);
      if (v == nullptr) return 2;
      if (!std::strcmp(a, "--fast")) options.fast_override = v;
      else if (!std::strcmp(a, "--slow")) options.slow_override = v;
      else options.sysfs_root = v;
    } else {
      std::fprintf(stderr, "sentinel topology: unknown argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  topo::Topology t;
  std::string error;
  if (!topo::detect_topology(options, &t, &error)) {
    if (json)
      std::printf("%s\n", nlohmann::json({{"error", error}}).dump(2).c_str());
    std::fprintf(stderr, "sentinel topology: %s\n", error.c_str());
    return 1;
  }
  if (json)
    std::printf("%s\n", to_json(t).dump(2).c_str());
  else
    print_text(t);
  return 0;
}

}  // namespace sentinel::cli
