// The cost of HostLedger::try_reserve + release, the pair every fast allocation and free of a rank in
// a shared host budget pays. Side by side in one run: a ledger with 1 rank and one with 8 ranks joined
// (the other ranks are more slots of this process holding a few bytes each). Printed: ns per pair for
// each, and the 8-rank / 1-rank ratio. One thread, no contention: this is the path's own cost.
//
// For instruction counts (this machine has no PMU), run it under valgrind, on one line:
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*try_reserve*'
//   build/bench/place/sentinel_bench_ledger 100000
// and divide the "Collected" instructions by the try_reserve calls the bench prints.
//
//   sentinel_bench_ledger [pairs=5000000]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "core/process_identity.h"
#include "place/host_ledger.h"

using sentinel::place::HostLedger;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kBudget = uint64_t{1} << 40;

double ns_per_pair(HostLedger& ledger, uint64_t pairs) {
  const auto start = Clock::now();
  for (uint64_t i = 0; i < pairs; ++i) {
    const uint64_t bytes = (i & 7) + 1;  // varies, so the compiler keeps every call
    if (!ledger.try_reserve(bytes)) std::abort();
    ledger.release(bytes);
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(pairs);
}

bool join(HostLedger& l, const char* path) {
  const sentinel::Status s = l.join(path, kBudget, getpid(), sentinel::process_start_time(getpid()));
  if (s.is_ok()) return true;
  std::fprintf(stderr, "join: %s\n", s.message());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t pairs = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 5000000;
  char tmpl[] = "/tmp/sentinel-ledger-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  char one_path[HostLedger::kPathMax], many_path[HostLedger::kPathMax];
  if (!HostLedger::path_for(tmpl, "one", "host", one_path, sizeof one_path) ||
      !HostLedger::path_for(tmpl, "many", "host", many_path, sizeof many_path))
    return 1;
  HostLedger one;
  constexpr int kRanks = 8;
  auto many = std::make_unique<HostLedger[]>(kRanks);
  bool ok = join(one, one_path);
  for (int r = 0; r < kRanks && ok; ++r) ok = join(many[r], many_path) && many[r].try_reserve(4096);
  if (ok) {
    ns_per_pair(one, pairs / 10);  // warm-up
    const double one_ns = ns_per_pair(one, pairs);
    const double many_ns = ns_per_pair(many[0], pairs);
    std::printf("ledger try_reserve+release: 1 rank %.1f ns/pair, %d ranks %.1f ns/pair, ratio %.2f "
                "(%llu try_reserve calls)\n",
                one_ns, kRanks, many_ns, many_ns / one_ns,
                static_cast<unsigned long long>(pairs / 10 + 2 * pairs + kRanks));
  }
  std::filesystem::remove_all(tmpl);
  return ok ? 0 : 1;
}
