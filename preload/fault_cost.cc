#include "fault_cost.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

#include "core/size_class.h"
#include "os/measure_clock.h"
#include "os/os.h"
#include "os/resident.h"
#include "runtime_state.h"

namespace sentinel::rt {
namespace {

constexpr uint64_t kBytes = 2ull << 20;
constexpr int kRounds = 3;

void touch(char* p, uint64_t bytes) {
  for (uint64_t off = 0; off < bytes; off += kPageSize) *static_cast<volatile char*>(p + off) = 1;
}

// As a fast birth into an empty extent gets its pages (preload/runtime.cc, populate_birth): with one call
// where the kernel has it, else page by page.
void fault_in(char* p, uint64_t bytes) {
  if (!os::make_resident(p, bytes)) touch(p, bytes);
}

}  // namespace

FaultCost measure_fault_cost() noexcept {
  FaultCost c;
  void* m = os::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return c;
  char* p = static_cast<char*>(m);
  os::madvise(p, kBytes, MADV_NOHUGEPAGE);
  touch(p, kBytes);  // a range that never had pages costs less to drop than a recycled one
  double best = -1;
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t t0 = os::measure_ns();
    if (os::madvise(p, kBytes, MADV_DONTNEED) != 0) break;
    fault_in(p, kBytes);
    const double ns = static_cast<double>(os::measure_ns() - t0) / static_cast<double>(kBytes);
    best = best < 0 ? ns : std::min(best, ns);
  }
  os::munmap(m, kBytes);
  c.valid = best > 0;
  c.ns_per_byte = best;
  return c;
}

FaultCost measured_turnover_cost() noexcept {
  FaultCost c;
  const uint64_t bytes = g_state.counters.fast_births_populated_bytes.load(std::memory_order_relaxed);
  const uint64_t ns = g_state.counters.fast_turnover_ns.load(std::memory_order_relaxed);
  if (bytes < kEnoughTurnoverBytes || ns == 0) return c;
  c.valid = true;
  c.ns_per_byte = static_cast<double>(ns) / static_cast<double>(bytes);
  return c;
}

}  // namespace sentinel::rt
