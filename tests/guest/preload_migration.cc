// Migration through the preload, in the two-node guest: objects move back and forth with
// sentinel_move_object() while another thread writes and checks them, and objects are freed while
// their moves are queued or running (their extents are reused at once by new objects). At the end
// every object's content is intact, every live object is on the node Sentinel reports, and the
// runtime's accounting is balanced (checked afterwards from SENTINEL_STATS by place_stats_check).
//   preload_migration [--until-killed]
// --until-killed: the move rounds never end, so a kill (guest.kill9_migration) always lands in the
// middle of migrations and never in the exit path, where the stats file is being written.
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "place_probe.h"

namespace {

using MoveFn = uint64_t (*)(const void*, int);
using WaitFn = int (*)(uint64_t, int);

struct Object {
  std::mutex mu;
  unsigned char* data = nullptr;
  size_t size = 0;
  uint32_t seed = 0;
  uint64_t last_ticket = 0;  // of the last move queued for it (or for the extent it had before)
  void fill() {
    for (size_t i = 0; i < size; i += 512) data[i] = static_cast<unsigned char>(seed + i / 512);
  }
  bool check() const {
    for (size_t i = 0; i < size; i += 512)
      if (data[i] != static_cast<unsigned char>(seed + i / 512)) return false;
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) {
  place_probe::require_guest();
  const bool until_killed = argc > 1 && std::strcmp(argv[1], "--until-killed") == 0;
  auto object_node = place_probe::object_node_fn();
  auto move = reinterpret_cast<MoveFn>(dlsym(RTLD_DEFAULT, "sentinel_move_object"));
  auto wait = reinterpret_cast<WaitFn>(dlsym(RTLD_DEFAULT, "sentinel_wait_move"));
  PROBE_CHECK(move != nullptr && wait != nullptr, "libsentinel.so does not export the move API");

  constexpr int kObjects = 24;
  constexpr int kRounds = 2000;
  std::vector<Object> objs(kObjects);
  std::mt19937 rng(7);
  for (int i = 0; i < kObjects; ++i) {
    objs[i].size = (64u << 10) * (1 + i % 8);
    objs[i].data = static_cast<unsigned char*>(std::malloc(objs[i].size));
    objs[i].seed = static_cast<uint32_t>(i);
    objs[i].fill();
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> corrupt{0}, checks{0};
  std::thread user([&] {
    std::mt19937 r(11);
    while (!stop.load()) {
      Object& o = objs[r() % kObjects];
      std::lock_guard<std::mutex> g(o.mu);
      if (!o.check()) ++corrupt;
      ++o.seed;
      o.fill();
      ++checks;
    }
  });

  uint64_t queued = 0, refused = 0, frees_in_flight = 0;
  for (int round = 0; until_killed || round < kRounds; ++round) {
    Object& o = objs[rng() % kObjects];
    std::lock_guard<std::mutex> g(o.mu);
    const int node = static_cast<int>(rng() % 2);
    const uint64_t ticket = move(o.data, node);
    ticket != 0 ? ++queued : ++refused;
    if (ticket != 0) o.last_ticket = ticket;
    if (ticket != 0 && rng() % 8 == 0) {
      // Free it while its move may still be queued or running; a new object may get the extent at once.
      if (!o.check()) ++corrupt;
      std::free(o.data);
      ++frees_in_flight;
      o.data = static_cast<unsigned char*>(std::malloc(o.size));
      o.fill();
    } else if (ticket != 0 && rng() % 4 == 0) {
      PROBE_CHECK(wait(ticket, -1) != 0, "a move was still pending after waiting forever");
    }
  }
  stop = true;
  user.join();

  // Settle every object on a known node and check it page by page.
  int on_node[2] = {0, 0};
  for (int i = 0; i < kObjects; ++i) {
    Object& o = objs[i];
    PROBE_CHECK(o.check(), "object %d corrupted", i);
    const int want = i % 2;
    // A move queued in the last rounds may still be running: Sentinel reports the node an object is
    // on until its move ends, so "already on the wanted node" can be a move away from it, half done
    // (seen once: object 1 at 13/18 pages on node 0/1, one page in migration, Sentinel saying node 1).
    if (o.last_ticket != 0) wait(o.last_ticket, -1);
    for (int attempt = 0; attempt < 100 && object_node(o.data) != want; ++attempt) {
      const uint64_t t = move(o.data, want);
      if (t != 0) wait(t, -1);
      else usleep(1000);  // its previous move is still finishing
    }
    const int node = object_node(o.data);
    PROBE_CHECK(node == want, "object %d: Sentinel says node %d, wanted %d", i, node, want);
    const place_probe::NodePages pc = place_probe::node_pages(o.data, o.size);
    const uint64_t on_want = want == 0 ? pc.n0 : pc.n1;
    PROBE_CHECK(on_want == (o.size + 4095) / 4096, "object %d: pages on node 0/1 = %lu/%lu, absent %lu", i,
                static_cast<unsigned long>(pc.n0), static_cast<unsigned long>(pc.n1),
                static_cast<unsigned long>(pc.absent));
    PROBE_CHECK(o.check(), "object %d corrupted after its last move", i);
    ++on_node[want];
  }
  PROBE_CHECK(corrupt.load() == 0, "%lu corrupted reads", static_cast<unsigned long>(corrupt.load()));
  for (auto& o : objs) std::free(o.data);

  // A free while the move is surely running: 64 MiB takes hundreds of milliseconds under emulation.
  // The extent must not be handed out again until the move ends, and nothing may be lost.
  constexpr size_t kBig = 64u << 20;
  auto* big = static_cast<unsigned char*>(std::malloc(kBig));
  std::memset(big, 0x5a, kBig);
  const int big_node = object_node(big);
  const uint64_t big_move = move(big, 1 - big_node);
  PROBE_CHECK(big_move != 0, "the big move was refused");
  usleep(20000);
  std::free(big);
  auto* next = static_cast<unsigned char*>(std::malloc(kBig));
  const bool reused = next == big;
  std::memset(next, 0x33, kBig);
  const int big_end = wait(big_move, -1);
  PROBE_CHECK(big_end != 0, "the big move never ended");
  // Under injected faults (guest.faults) the move may fail in its first batch and end before the free, and
  // then its extent is free to reuse: CI's guest stage once got the same address back there. A move that
  // succeeded was running at the free and must not have been recycled; guest.preload_migration, without
  // injected faults, checks every run that way.
  PROBE_CHECK(!reused || big_end < 0, "the extent of an object still moving was handed out again (move %s)",
              big_end > 0 ? "done" : "failed");
  for (size_t i = 0; i < kBig; i += 4096) PROBE_CHECK(next[i] == 0x33, "the new object was overwritten");
  std::free(next);
  std::printf("moves queued %lu, refused %lu, freed in flight %lu, writer checks %lu, final %d on node 0 / %d on node 1\n",
              static_cast<unsigned long>(queued), static_cast<unsigned long>(refused),
              static_cast<unsigned long>(frees_in_flight), static_cast<unsigned long>(checks.load()), on_node[0],
              on_node[1]);
  return 0;
}
