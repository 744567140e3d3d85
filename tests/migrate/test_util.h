// Helpers shared by the migration engine tests.
#pragma once

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "migrate/engine.h"

namespace sentinel::migrate::testing {

// A pattern of 32-bit words over [p, p + len), and whether it is still there.
inline void fill_pattern(char* p, size_t len, uint32_t seed) {
  auto* w = reinterpret_cast<uint32_t*>(p);
  for (size_t i = 0; i < len / 4; ++i) w[i] = seed * 2654435761u + static_cast<uint32_t>(i);
}
inline bool pattern_intact(const char* p, size_t len, uint32_t seed) {
  auto* w = reinterpret_cast<const uint32_t*>(p);
  for (size_t i = 0; i < len / 4; ++i)
    if (w[i] != seed * 2654435761u + static_cast<uint32_t>(i)) return false;
  return true;
}

// An anonymous mapping that unmaps itself.
struct Mapping {
  explicit Mapping(size_t n) : len(n) {
    addr = static_cast<char*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, len);
  }
  bool ok() const { return addr != MAP_FAILED; }
  void fill(uint32_t seed) { fill_pattern(addr, len, seed); }
  bool check(uint32_t seed) const { return pattern_intact(addr, len, seed); }
  char* addr;
  size_t len;
};

// Node of every page (negative errno for pages not present), via move_pages query mode.
inline std::vector<int> page_nodes(const void* p, size_t len) {
  std::vector<void*> pages;
  for (size_t off = 0; off < len; off += 4096) pages.push_back(const_cast<char*>(static_cast<const char*>(p)) + off);
  std::vector<int> status(pages.size(), -1000);
  if (move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) status.assign(pages.size(), -1000);
  return status;
}

inline size_t pages_on(const void* p, size_t len, int node) {
  size_t n = 0;
  for (int s : page_nodes(p, len)) n += s == node;
  return n;
}

inline bool have_two_nodes() {
  return numa_available() >= 0 && numa_max_node() >= 1 && numa_node_size64(1, nullptr) > 0;
}

// Records every callback.
class RecordingOwner : public Owner {
 public:
  struct Call {
    uint64_t object_id, generation;
    MoveResult result;
  };
  void on_move_finished(uint64_t object_id, uint64_t generation, const MoveResult& result) override {
    std::lock_guard<std::mutex> g(mu);
    calls.push_back({object_id, generation, result});
    count.fetch_add(1);
  }
  std::vector<Call> snapshot() {
    std::lock_guard<std::mutex> g(mu);
    return calls;
  }
  std::mutex mu;
  std::vector<Call> calls;
  std::atomic<uint64_t> count{0};
};

}  // namespace sentinel::migrate::testing
