// In the guest: thousands of moves back and forth of objects that another thread keeps writing and
// checksumming; content stays intact and every object ends on the node last asked for. And objects
// that share one transparent huge page move alone (the engine splits the huge page first).
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "guest_util.h"
#include "migrate/engine.h"

namespace sentinel {
namespace {

using migrate::testing::Mapping;
constexpr auto kForever = std::chrono::hours(1);

TEST(GuestMigration, MovesUnderConcurrentUseKeepContent) {
  SENTINEL_REQUIRE_TWO_NODES();
  constexpr int kObjects = 16, kMoves = 3000;
  std::vector<std::unique_ptr<Mapping>> objs;
  std::vector<uint32_t> seed(kObjects);
  std::vector<std::mutex> locks(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    objs.push_back(std::make_unique<Mapping>(size_t{64} << 10 << (i % 5)));  // 64 KiB .. 1 MiB
    ASSERT_TRUE(objs.back()->ok());
    seed[i] = i;
    objs.back()->fill(seed[i]);
  }
  migrate::EngineConfig cfg;
  cfg.fast_node = 0;
  cfg.slow_node = 1;
  cfg.chunk_pages = 64;  // several move_pages calls per object, so moves interleave with writes
  migrate::Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err)) << err;

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> checks{0}, corrupt{0};
  std::thread user([&] {
    std::mt19937 rng(1);
    while (!stop.load()) {
      int i = rng() % kObjects;
      std::lock_guard<std::mutex> g(locks[i]);
      if (!objs[i]->check(seed[i])) corrupt++;
      objs[i]->fill(++seed[i]);
      checks++;
    }
  });
  std::mt19937 rng(2);
  std::vector<int> last(kObjects, 0);
  std::vector<migrate::Ticket> pending;
  for (int k = 0; k < kMoves; ++k) {
    int i = rng() % kObjects;
    int node = rng() % 2;
    migrate::Ticket t;
    while (!(t = e.enqueue(i, 1, objs[i]->addr, objs[i]->len, node,
                           node == 0 ? migrate::Priority::kHigh : migrate::Priority::kNormal))
                .valid()) {
      std::this_thread::yield();  // queue full: let the engine catch up
    }
    pending.push_back(t);
    if (pending.size() >= 64) {
      for (auto p : pending) e.wait(p, kForever);
      pending.clear();
    }
  }
  for (auto p : pending) e.wait(p, kForever);
  // Final placement: object i on node i % 2.
  for (int i = 0; i < kObjects; ++i) {
    migrate::MoveResult r;
    ASSERT_EQ(e.wait(e.enqueue(i, 1, objs[i]->addr, objs[i]->len, i % 2, migrate::Priority::kNormal), kForever, &r),
              migrate::State::kDone)
        << migrate::to_string(r.reason);
    last[i] = i % 2;
  }
  stop = true;
  user.join();
  e.stop();
  EXPECT_EQ(corrupt.load(), 0u);
  EXPECT_GT(checks.load(), 0u);
  for (int i = 0; i < kObjects; ++i) {
    EXPECT_TRUE(objs[i]->check(seed[i])) << "object " << i;
    EXPECT_EQ(migrate::testing::pages_on(objs[i]->addr, objs[i]->len, last[i]), objs[i]->len / 4096) << "object " << i;
  }
  auto s = e.snapshot();
  EXPECT_GE(s.moves_done, static_cast<uint64_t>(kMoves) * 9 / 10) << "failed " << s.moves_failed;
  EXPECT_GT(s.objects_to_slow, 0u);
  EXPECT_GT(s.objects_to_fast, 0u);
  EXPECT_EQ(s.pages_nomem, 0u);
  std::printf("moves done %lu failed %lu, busy pages %lu, restored neighbour pages %lu, to slow %lu MiB, "
              "to fast %lu MiB, user checks %lu\n",
              (unsigned long)s.moves_done, (unsigned long)s.moves_failed, (unsigned long)s.pages_busy,
              (unsigned long)s.pages_restored,
              (unsigned long)(s.bytes_to_slow >> 20), (unsigned long)(s.bytes_to_fast >> 20),
              (unsigned long)checks.load());
}

// AnonHugePages (bytes) of the VMA that holds addr, from /proc/self/smaps.
size_t anon_huge_bytes(const void* addr) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0;
  char line[512];
  bool in_vma = false;
  size_t kb = 0;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {  // a VMA header line
      in_vma = lo <= a && a < hi;
    } else if (in_vma && std::strncmp(line, "AnonHugePages:", 14) == 0) {
      kb = std::strtoull(line + 14, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb << 10;
}

// Three objects in one 2 MiB transparent huge page (an allocator packs objects like this, and
// khugepaged collapses neighbouring objects into one): move_pages migrates a huge page whole, so
// without the engine's split the neighbours would change node with every move.
TEST(GuestMigration, ObjectsSharingAHugePageMoveAlone) {
  SENTINEL_REQUIRE_TWO_NODES();
  constexpr size_t kHuge = size_t{2} << 20;
  Mapping raw(3 * kHuge);
  ASSERT_TRUE(raw.ok());
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw.addr) + kHuge - 1) & ~(kHuge - 1));
  ASSERT_EQ(madvise(base, kHuge, MADV_HUGEPAGE), 0);
  std::memset(base, 1, kHuge);
  if (anon_huge_bytes(base) < kHuge) GTEST_SKIP() << "no transparent huge page (THP disabled or none free)";
  ASSERT_EQ(migrate::testing::pages_on(base, kHuge, 0), kHuge / 4096) << "the huge page should start on node 0";

  struct Obj {
    size_t off, len;
    int node = 0;
  } objs[3] = {{0, 64 << 10}, {64 << 10, 1 << 20}, {(64 << 10) + (1 << 20), kHuge - (64 << 10) - (1 << 20)}};
  for (size_t i = 0; i < 3; ++i) std::memset(base + objs[i].off, static_cast<int>('a' + i), objs[i].len);

  migrate::EngineConfig cfg;
  cfg.fast_node = 0;
  cfg.slow_node = 1;
  migrate::Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err)) << err;
  // Each object to node 1 and back, one at a time; after every move all three are where they belong.
  const int plan[][2] = {{1, 1}, {0, 1}, {2, 1}, {1, 0}, {2, 0}, {0, 0}, {2, 1}};
  for (const auto& step : plan) {
    Obj& o = objs[step[0]];
    migrate::MoveResult r;
    ASSERT_EQ(e.wait(e.enqueue(step[0], 1, base + o.off, o.len, step[1], migrate::Priority::kNormal), kForever, &r),
              migrate::State::kDone)
        << migrate::to_string(r.reason);
    o.node = step[1];
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(migrate::testing::pages_on(base + objs[i].off, objs[i].len, objs[i].node), objs[i].len / 4096)
          << "object " << i << " after moving object " << step[0] << " to node " << step[1];
    }
  }
  e.stop();
  for (size_t i = 0; i < 3; ++i) {
    const char want = static_cast<char>('a' + i);
    size_t bad = 0;
    for (size_t k = 0; k < objs[i].len; ++k) bad += base[objs[i].off + k] != want;
    EXPECT_EQ(bad, 0u) << "object " << i;
  }
  std::printf("pages restored after a failed split: %lu\n", (unsigned long)e.snapshot().pages_restored);
}

}  // namespace
}  // namespace sentinel
