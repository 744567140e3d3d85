// Guest test: the ranks of one job on one host share SENTINEL_FAST_BUDGET through the host ledger
// (docs/distributed.md), sampled from outside.
//
//   ledger_ranks drive LIBSENTINEL BUDGET_MIB   the test (run it without LD_PRELOAD)
//   ledger_ranks rank WANT_MIB SECONDS          one rank: keeps WANT_MIB of 1 MiB objects live, replacing
//                                               one every few milliseconds (started by the driver, preloaded)
//
// The driver starts ranks 0 and 1 of a job, each wanting 3/4 of the budget, and samples both from outside:
// it stops both (SIGSTOP, so the two reads form one instant), reads /proc/<pid>/numa_maps and sums the
// node-0 pages of every mapping with a NUMA policy (the object extents Sentinel binds; everything else of
// the process has the default policy). That sum must never exceed the budget. Then rank 0 is killed with
// SIGKILL; a new rank 2 joins the job's ledger and must get fast memory (rank 0's share came back), still
// within the budget with rank 1. Rank 2 is killed too; rank 1 ends normally; finally a new job's only
// rank (same ledger name) must get all it wants on node 0: nothing of the killed ranks' shares leaked.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr size_t kObject = 1 << 20;

double seconds_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void sleep_ms(int ms) {
  const timespec t{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, nullptr);
}

int run_rank(size_t want_mib, double seconds) {
  std::vector<char*> live(want_mib, nullptr);
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  const double end = seconds_now() + seconds;
  for (size_t i = 0; seconds_now() < end; ++i) {
    const size_t k = i < live.size() ? i : rng() % live.size();
    free(live[k]);
    live[k] = static_cast<char*>(malloc(kObject));
    if (live[k] == nullptr) return 2;
    std::memset(live[k], static_cast<int>(i), kObject);  // first touch: pages land where the extent is bound
    if (i >= live.size()) sleep_ms(5);
  }
  for (char* p : live) free(p);
  return 0;
}

// Bytes on node 0 of the mappings that carry a NUMA policy (Sentinel's bound object extents).
uint64_t node0_object_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/numa_maps");
  std::string line;
  uint64_t bytes = 0;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string address, policy, word;
    words >> address >> policy;
    if (policy == "default") continue;
    uint64_t n0 = 0, page_kb = 4;
    while (words >> word) {
      if (word.rfind("N0=", 0) == 0) n0 = std::stoull(word.substr(3));
      if (word.rfind("kernelpagesize_kB=", 0) == 0) page_kb = std::stoull(word.substr(18));
    }
    bytes += n0 * page_kb * 1024;
  }
  return bytes;
}

struct Job {
  std::string lib, port, budget;
};

pid_t start_rank(const Job& job, const char* self, int rank, size_t want_mib, double seconds) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const std::string r = std::to_string(rank);
  setenv("LD_PRELOAD", job.lib.c_str(), 1);
  setenv("SENTINEL_FAST_BUDGET", job.budget.c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", job.port.c_str(), 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", r.c_str(), 1);
  setenv("LOCAL_RANK", r.c_str(), 1);
  setenv("SENTINEL_STATS", "/tmp/ledger-ranks.%r.json", 1);
  setenv("SENTINEL_LOG", "info", 1);
  const std::string want = std::to_string(want_mib), secs = std::to_string(seconds);
  execl(self, "ledger_ranks", "rank", want.c_str(), secs.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

struct Sampled {
  uint64_t max_sum = 0, samples = 0, violations = 0;
  std::vector<uint64_t> max_of;
};

// Samples the ranks for `seconds`: each sample stops them all, reads, and lets them go on.
Sampled sample(const std::vector<pid_t>& ranks, double seconds, uint64_t budget) {
  Sampled s;
  s.max_of.assign(ranks.size(), 0);
  const double end = seconds_now() + seconds;
  while (seconds_now() < end) {
    for (pid_t p : ranks) kill(p, SIGSTOP);
    uint64_t sum = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const uint64_t b = node0_object_bytes(ranks[i]);
      s.max_of[i] = std::max(s.max_of[i], b);
      sum += b;
    }
    for (pid_t p : ranks) kill(p, SIGCONT);
    ++s.samples;
    s.max_sum = std::max(s.max_sum, sum);
    if (sum > budget) {
      ++s.violations;
      std::printf("  sample %llu: %llu node-0 object bytes > budget %llu\n", static_cast<unsigned long long>(s.samples),
                  static_cast<unsigned long long>(sum), static_cast<unsigned long long>(budget));
    }
    sleep_ms(20);
  }
  return s;
}

bool exited_ok(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

uint64_t stat_value(const char* path, const char* key) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string k = std::string("\"") + key + "\": ";
  const size_t at = text.find(k);
  return at == std::string::npos ? ~uint64_t{0} : std::strtoull(text.c_str() + at + k.size(), nullptr, 10);
}

int drive(const char* self, const char* lib, uint64_t budget_mib) {
  const uint64_t budget = budget_mib << 20;
  const size_t want = budget_mib * 3 / 4;
  Job job{lib, std::to_string(20000 + getpid() % 20000), std::to_string(budget_mib) + "M"};
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
  };

  std::printf("budget %llu MiB; each rank wants %zu MiB\n", static_cast<unsigned long long>(budget_mib), want);
  const pid_t r0 = start_rank(job, self, 0, want, 600);
  const pid_t r1 = start_rank(job, self, 1, want, 40);
  sleep_ms(1000);
  const Sampled both = sample({r0, r1}, 8, budget);
  std::printf("ranks 0+1: %llu samples, max node-0 object bytes %llu (rank 0 %llu, rank 1 %llu)\n",
              static_cast<unsigned long long>(both.samples), static_cast<unsigned long long>(both.max_sum),
              static_cast<unsigned long long>(both.max_of[0]), static_cast<unsigned long long>(both.max_of[1]));
  expect(both.violations == 0, "two ranks together stay within the budget");
  expect(both.max_sum > budget / 2, "the ranks use the budget");

  kill(r0, SIGKILL);
  waitpid(r0, nullptr, 0);
  const pid_t r2 = start_rank(job, self, 2, want, 600);
  sleep_ms(3000);  // a survivor's service thread recovers the dead rank's share within about a second
  const Sampled after = sample({r1, r2}, 8, budget);
  std::printf("after kill -9 of rank 0, ranks 1+2: max %llu (rank 1 %llu, rank 2 %llu)\n",
              static_cast<unsigned long long>(after.max_sum), static_cast<unsigned long long>(after.max_of[0]),
              static_cast<unsigned long long>(after.max_of[1]));
  expect(after.violations == 0, "survivor and newcomer stay within the budget");
  expect(after.max_of[1] >= (budget - want * kObject) / 2, "the newcomer gets fast memory: rank 0's share came back");

  kill(r2, SIGKILL);
  waitpid(r2, nullptr, 0);
  expect(exited_ok(r1), "rank 1 ends normally after both others were killed");
  expect(stat_value("/tmp/ledger-ranks.1.json", "peak_host_fast_bytes") <= budget, "rank 1's ledger peak within the budget");

  // A new job with the same ledger name: one rank alone must get all it wants on node 0.
  const pid_t fresh = start_rank(job, self, 0, want, 600);
  sleep_ms(1000);
  const Sampled alone = sample({fresh}, 5, budget);
  kill(fresh, SIGTERM);
  waitpid(fresh, nullptr, 0);
  std::printf("a new job's rank alone: max node-0 object bytes %llu of %zu MiB wanted\n",
              static_cast<unsigned long long>(alone.max_sum), want);
  expect(alone.max_sum + 2 * kObject >= want * kObject, "nothing of the killed ranks' shares leaked");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "rank") == 0) return run_rank(std::strtoull(argv[2], nullptr, 10), std::atof(argv[3]));
  if (argc == 4 && std::strcmp(argv[1], "drive") == 0) return drive("/proc/self/exe", argv[2], std::strtoull(argv[3], nullptr, 10));
  std::fprintf(stderr, "usage: %s drive LIBSENTINEL BUDGET_MIB | rank WANT_MIB SECONDS\n", argv[0]);
  return 2;
}
