// enqueue() and cancel() must not allocate: they are called from inside malloc/free. This test
// binary interposes malloc (glibc lets the executable define it) and counts calls made by the
// current thread while a flag is set.
#include <gtest/gtest.h>

#include "migrate/engine.h"
#include "test_util.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);

namespace {
thread_local bool counting = false;
thread_local unsigned long allocations = 0;
}  // namespace

extern "C" void* malloc(size_t n) {
  if (counting) ++allocations;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t a, size_t b) {
  if (counting) ++allocations;
  return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, size_t n) {
  if (counting) ++allocations;
  return __libc_realloc(p, n);
}

namespace sentinel::migrate {
namespace {

TEST(EngineHotPath, EnqueueAndCancelDoNotAllocate) {
  testing::Mapping m(64 << 10);
  EngineConfig cfg;
  cfg.queue_capacity = 256;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err));
  // Sanity: the counter sees allocations at all.
  counting = true;
  void* probe = malloc(16);
  counting = false;
  free(probe);
  ASSERT_EQ(allocations, 1u);
  allocations = 0;
  counting = true;
  for (int i = 0; i < 1000; ++i) {
    e.enqueue(i, 1, m.addr, m.len, 0, static_cast<Priority>(i % 3));
    if (i % 4 == 0) e.cancel(i, 1);
    (void)e.query(Ticket{static_cast<uint64_t>(i)});
  }
  counting = false;
  EXPECT_EQ(allocations, 0u);
}

}  // namespace
}  // namespace sentinel::migrate
