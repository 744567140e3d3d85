// In the guest: thousands of moves back and forth of objects that another thread keeps writing and
// checksumming; content stays intact and every object ends on the node last asked for.
#include <atomic>
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
                           node == 0 ? migrate::Priority::kPrefetch : migrate::Priority::kEvict))
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
    ASSERT_EQ(e.wait(e.enqueue(i, 1, objs[i]->addr, objs[i]->len, i % 2, migrate::Priority::kEvict), kForever, &r),
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
  std::printf("moves done %lu failed %lu, busy pages %lu, to slow %lu MiB, to fast %lu MiB, user checks %lu\n",
              (unsigned long)s.moves_done, (unsigned long)s.moves_failed, (unsigned long)s.pages_busy,
              (unsigned long)(s.bytes_to_slow >> 20), (unsigned long)(s.bytes_to_fast >> 20),
              (unsigned long)checks.load());
}

}  // namespace
}  // namespace sentinel
