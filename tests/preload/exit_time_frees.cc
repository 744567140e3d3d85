// Frees and allocates objects during exit: from static destructors, from atexit handlers registered
// before and after Sentinel's own, and from a thread still running. The process must exit with 0.
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct FreesAtExit {
  std::vector<void*> blocks;
  ~FreesAtExit() {
    for (void* p : blocks) std::free(p);
    void* late = std::malloc(1 << 20);  // allocate after Sentinel's exit report
    std::memset(late, 1, 1 << 20);
    std::free(late);
  }
};
FreesAtExit g_holder;
std::atomic<bool> g_stop{false};

void* churn(void*) {
  while (!g_stop.load()) {
    void* p = std::malloc(300000);
    std::memset(p, 2, 300000);
    std::free(p);
  }
  return nullptr;
}

}  // namespace

int main() {
  for (int i = 0; i < 16; ++i) {
    void* p = std::malloc(100000 + i * 4096);
    std::memset(p, 3, 100000);
    g_holder.blocks.push_back(p);
  }
  std::atexit([] {
    void* p = std::realloc(std::malloc(70000), 900000);
    std::free(p);
  });
  pthread_t t;
  pthread_create(&t, nullptr, churn, nullptr);
  for (int i = 0; i < 1000; ++i) std::free(std::malloc(65536 * (1 + i % 8)));
  return 0;  // exit with the churn thread still allocating
}
