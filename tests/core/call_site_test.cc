#include "core/call_site.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace sentinel {
namespace {

CallSiteHasher g_hasher;

// The empty asm after each call keeps the compiler from turning the calls into jumps (tail calls),
// which would remove the very frames the test looks at.
__attribute__((noinline)) uint64_t capture_here() {
  uint64_t h = g_hasher.capture(3, 0);  // frames: capture, capture_here, site_a or site_b
  asm volatile("" : "+r"(h));
  return h;
}
__attribute__((noinline)) uint64_t site_a() {
  uint64_t h = capture_here();
  asm volatile("" : "+r"(h));
  return h;
}
__attribute__((noinline)) uint64_t site_b() {
  uint64_t h = capture_here();
  asm volatile("" : "+r"(h));
  return h;
}

TEST(CallSite, SameCallSiteSameHashDifferentCallSitesDiffer) {
  const uint64_t a1 = site_a();
  const uint64_t a2 = site_a();  // another call instruction here, but outside the 3 frames hashed
  const uint64_t b = site_b();
  EXPECT_NE(a1, 0u);
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
}

// The interpreter's frames end a call-site (stop_at_module_of): with this test program as the "interpreter",
// the hash keeps only the innermost frame (capture's own return into capture_here), the same for both
// callers; with a module the stacks do not pass through (libc's), or none, the callers differ again.
TEST(CallSite, FramesOfTheStopModuleEndTheHash) {
  g_hasher.stop_at_module_of(reinterpret_cast<const void*>(&site_a));
  const uint64_t a = site_a(), b = site_b();
  g_hasher.stop_at_module_of(reinterpret_cast<const void*>(&::dladdr));
  const uint64_t a_libc = site_a(), b_libc = site_b();
  g_hasher.stop_at_module_of(nullptr);
  const uint64_t a_whole = site_a(), b_whole = site_b();
  EXPECT_NE(a, 0u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a_libc, b_libc);
  EXPECT_EQ(a_libc, a_whole);
  EXPECT_EQ(b_libc, b_whole);
  EXPECT_NE(a, a_whole);
}

TEST(CallSite, NormalisedAddressesAreModuleRelative) {
  // Two addresses in the same module map to hashes that differ exactly by their offset difference
  // (the module part is the same), so the same code gives the same value wherever it is loaded.
  const uintptr_t f = reinterpret_cast<uintptr_t>(&site_a) + 1;
  const uintptr_t g = reinterpret_cast<uintptr_t>(&site_b) + 1;
  const uint64_t nf = g_hasher.normalize(f);
  const uint64_t ng = g_hasher.normalize(g);
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(f - 1), &info), 0);
  const uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  EXPECT_NE(nf, f);
  EXPECT_EQ(nf ^ ng, (f - base) ^ (g - base));
  EXPECT_EQ(g_hasher.normalize(f), nf);  // the cached value is the same
}

TEST(CallSite, HashOfExplicitFramesIsOrderSensitive) {
  void* ab[] = {reinterpret_cast<void*>(&site_a), reinterpret_cast<void*>(&site_b)};
  void* ba[] = {reinterpret_cast<void*>(&site_b), reinterpret_cast<void*>(&site_a)};
  EXPECT_NE(g_hasher.hash_frames(ab, 2), g_hasher.hash_frames(ba, 2));
  EXPECT_EQ(g_hasher.hash_frames(ab, 2), g_hasher.hash_frames(ab, 2));
}

// The cache takes no lock (call_site.h): threads normalising more addresses than it has entries, so that
// they overwrite each other's entries all the time, must each get exactly what one thread alone gets.
// A torn entry accepted as a hit would give a wrong value. (Run under ThreadSanitizer by the sanitizer
// stage.)
TEST(CallSiteConcurrent, RacingThreadsGetTheSingleThreadedValues) {
  constexpr int kAddresses = 3 * 4096;
  constexpr int kThreads = 4;
  constexpr int kRounds = 8;
  // Addresses in two modules (this test and libc), inside their code: every one resolves to its module.
  const uintptr_t here = reinterpret_cast<uintptr_t>(&site_a);
  const uintptr_t libc = reinterpret_cast<uintptr_t>(&::dladdr);
  std::vector<uintptr_t> pcs;
  for (int i = 0; i < kAddresses; ++i) pcs.push_back((i % 2 == 0 ? here : libc) + 1 + static_cast<uintptr_t>(i / 2) * 8);
  std::vector<uint64_t> expected;
  {
    CallSiteHasher alone;
    for (uintptr_t pc : pcs) expected.push_back(alone.normalize(pc));
  }
  CallSiteHasher shared;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (int k = 0; k < kAddresses; ++k) {
          const int i = (k * (2 * t + 1) + round * 977) % kAddresses;  // each thread its own order
          if (shared.normalize(pcs[i]) != expected[i]) ++wrong[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
  EXPECT_GE(shared.cache_misses(), static_cast<uint64_t>(kAddresses));  // the entries were overwritten
}

}  // namespace
}  // namespace sentinel
