// Helpers for the placement programs that run under LD_PRELOAD=libsentinel.so in the two-node guest
// (place_*.cc). They are plain programs (no test framework) so that they make no large allocation of
// their own besides the objects they test: every object Sentinel sees is one the program accounts for.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "place/budget_placer.h"
#include "place/extent_binding.h"

namespace place_probe {

[[noreturn]] inline void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "FAIL: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::fflush(nullptr);
  std::_Exit(1);
}

#define PROBE_CHECK(cond, ...)                                  \
  do {                                                          \
    if (!(cond)) ::place_probe::fail(#cond ": " __VA_ARGS__);   \
  } while (0)

using ObjectNodeFn = int (*)(const void*);
using ActiveFn = int (*)();

// The runtime's answer to "which node did you place this object on" (-1: not an object).
inline ObjectNodeFn object_node_fn() {
  auto active = reinterpret_cast<ActiveFn>(dlsym(RTLD_DEFAULT, "sentinel_active"));
  if (active == nullptr) fail("libsentinel.so is not loaded (run with LD_PRELOAD)");
  if (active() != 1) fail("Sentinel is loaded but not active (see its log)");
  auto fn = reinterpret_cast<ObjectNodeFn>(dlsym(RTLD_DEFAULT, "sentinel_object_node"));
  if (fn == nullptr) fail("libsentinel.so does not export sentinel_object_node");
  return fn;
}

inline bool have_two_nodes() { return access("/sys/devices/system/node/node1/meminfo", R_OK) == 0; }

inline void require_guest() {
  if (!have_two_nodes()) fail("needs two NUMA nodes: run in the guest (ctest -L guest)");
}

// SENTINEL_FAST_BUDGET as the runtime reads it.
inline sentinel::place::BudgetSpec budget_from_env() {
  sentinel::place::BudgetSpec spec;
  const char* text = std::getenv("SENTINEL_FAST_BUDGET");
  if (text == nullptr) fail("SENTINEL_FAST_BUDGET is not set");
  if (!sentinel::parse_budget_spec(text, &spec)) fail("SENTINEL_FAST_BUDGET=%s: not a budget", text);
  return spec;
}

// Pages of [p, p+len) on node 0 and node 1 (present pages only).
struct NodePages {
  uint64_t n0 = 0, n1 = 0, absent = 0;
};
inline NodePages node_pages(const void* p, size_t len) {
  uint64_t counts[2] = {};
  NodePages r;
  if (!sentinel::place::count_pages(p, len, counts, 1, &r.absent)) fail("move_pages query failed");
  r.n0 = counts[0];
  r.n1 = counts[1];
  return r;
}

inline void fill(void* p, size_t len, uint32_t seed) {
  auto* w = static_cast<uint32_t*>(p);
  for (size_t i = 0; i < len / 4; ++i) w[i] = seed * 2654435761u + static_cast<uint32_t>(i);
}
inline bool intact(const void* p, size_t len, uint32_t seed) {
  auto* w = static_cast<const uint32_t*>(p);
  for (size_t i = 0; i < len / 4; ++i)
    if (w[i] != seed * 2654435761u + static_cast<uint32_t>(i)) return false;
  return true;
}

}  // namespace place_probe
