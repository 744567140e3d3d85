// A fake /sys tree in a temporary directory, for topology tests. Writes the same files the kernel
// provides (node/online, nodeN/meminfo|cpulist|distance, access0 HMAT, memory_tiering).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"

namespace sentinel::topo::testing {

class FakeSysfs {
 public:
  const std::string& root() const { return root_; }

  void write(const std::string& rel, const std::string& text) {
    std::filesystem::path p = root_ + "/" + rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void set_online(const std::string& list) { write("devices/system/node/online", list + "\n"); }
  void add_node(int id, uint64_t total_mb, uint64_t free_mb, const std::string& cpulist,
                const std::vector<int>& distances) {
    const std::string d = "devices/system/node/node" + std::to_string(id);
    std::string mi = "Node " + std::to_string(id) + " MemTotal:       " + std::to_string(total_mb * 1024) +
                     " kB\nNode " + std::to_string(id) + " MemFree:        " + std::to_string(free_mb * 1024) +
                     " kB\nNode " + std::to_string(id) + " MemUsed:        0 kB\n";
    write(d + "/meminfo", mi);
    write(d + "/cpulist", cpulist + "\n");
    std::string dist;
    for (size_t i = 0; i < distances.size(); ++i) dist += (i ? " " : "") + std::to_string(distances[i]);
    write(d + "/distance", dist + "\n");
  }
  void set_tier(int tier, const std::string& nodelist) {
    write("devices/virtual/memory_tiering/memory_tier" + std::to_string(tier) + "/nodelist", nodelist + "\n");
  }
  void set_hmat(int node, uint64_t read_latency, uint64_t read_bandwidth) {
    const std::string d = "devices/system/node/node" + std::to_string(node) + "/access0/initiators";
    write(d + "/read_latency", std::to_string(read_latency) + "\n");
    write(d + "/write_latency", std::to_string(read_latency) + "\n");
    write(d + "/read_bandwidth", std::to_string(read_bandwidth) + "\n");
    write(d + "/write_bandwidth", std::to_string(read_bandwidth / 2) + "\n");
  }

 private:
  sentinel::testing::TempDir dir_{"sentinel-fakesys"};
  std::string root_ = dir_.path();
};

}  // namespace sentinel::topo::testing
