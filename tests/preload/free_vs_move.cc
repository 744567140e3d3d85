// free() against moves of the same objects (free_vs_move_test.cc runs this under the preload, as a dry run:
// a simulated slow node whose moves are booked, so the migration engine runs on a one-node machine).
//
// Worker threads allocate objects of a few sizes (so a freed extent is soon reused), publish each in a
// shared table, keep it a moment and free it; mover threads pick published objects at random and ask
// Sentinel to move them to the other node (sentinel_move_object), racing with the frees (a pointer
// may be freed, and its extent reused, between the pick and the call: the API must take that). At the
// end every object is freed and the program waits until every extent is back in the heap's cache (a
// move that was running when its object was freed gives the extent back when it ends), so the stats
// written at exit describe books with nothing live: the test checks them.
//
//   free_vs_move SECONDS
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "sentinel/sentinel.h"

namespace {

constexpr int kWorkers = 4;
constexpr int kMovers = 4;
constexpr size_t kSlots = 64;
constexpr size_t kSizes[] = {64 << 10, 128 << 10, 192 << 10};

std::atomic<void*> g_table[kSlots];
std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_allocs{0}, g_moves_asked{0}, g_moves_queued{0};

template <typename F>
F api(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}
decltype(&sentinel_move_object) g_move;
decltype(&sentinel_get_footprint) g_footprint;

uint64_t next(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ull;
}

void worker(int id) {
  uint64_t rng = 0x9e3779b97f4a7c15ull * (id + 1);
  while (!g_stop.load(std::memory_order_relaxed)) {
    const size_t size = kSizes[next(rng) % 3];
    char* p = static_cast<char*>(std::malloc(size));
    if (p == nullptr) std::abort();
    for (size_t off = 0; off < size; off += 4096) p[off] = static_cast<char>(id);
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    std::atomic<void*>& slot = g_table[next(rng) % kSlots];
    void* old = slot.exchange(p, std::memory_order_acq_rel);
    if (next(rng) % 4 == 0) std::this_thread::yield();  // keep it published a moment
    if (old != nullptr) std::free(old);
  }
}

void mover(int id, int fast, int slow) {
  uint64_t rng = 0x2545f4914f6cdd1dull * (id + 1);
  while (!g_stop.load(std::memory_order_relaxed)) {
    void* p = g_table[next(rng) % kSlots].load(std::memory_order_acquire);
    if (p == nullptr) continue;
    g_moves_asked.fetch_add(1, std::memory_order_relaxed);
    if (g_move(p, next(rng) % 2 == 0 ? slow : fast) != 0) g_moves_queued.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  g_move = api<decltype(&sentinel_move_object)>("sentinel_move_object");
  g_footprint = api<decltype(&sentinel_get_footprint)>("sentinel_get_footprint");
  auto active = api<int (*)()>("sentinel_active");
  auto node_of = api<decltype(&sentinel_object_node)>("sentinel_object_node");
  if (g_move == nullptr || g_footprint == nullptr || active == nullptr || node_of == nullptr || !active()) {
    std::printf("sentinel 0\n");
    return 2;
  }
  // The nodes: where a fresh object goes (the fast node), and the other one (the dry run's slow node).
  void* probe = std::malloc(kSizes[0]);
  const int fast = node_of(probe);
  std::free(probe);
  const int slow = fast == 0 ? 1 : 0;
  std::printf("sentinel 1 fast %d slow %d\n", fast, slow);

  std::vector<std::thread> threads;
  for (int i = 0; i < kWorkers; ++i) threads.emplace_back(worker, i);
  for (int i = 0; i < kMovers; ++i) threads.emplace_back(mover, i, fast, slow);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  g_stop.store(true);
  for (auto& t : threads) t.join();
  for (auto& slot : g_table) std::free(slot.exchange(nullptr));

  // Every extent back in the cache: moves still running when their objects were freed hand them back
  // when they end (a dry-run move sleeps for its modeled time, well under a second here).
  sentinel_footprint f{};
  for (int tries = 0; tries < 6000; ++tries) {
    g_footprint(&f);
    if (f.cached_bytes == f.extent_bytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("allocs %llu moves asked %llu queued %llu extent bytes %llu cached %llu\n",
              static_cast<unsigned long long>(g_allocs.load()), static_cast<unsigned long long>(g_moves_asked.load()),
              static_cast<unsigned long long>(g_moves_queued.load()), static_cast<unsigned long long>(f.extent_bytes),
              static_cast<unsigned long long>(f.cached_bytes));
  return 0;
}
