#include "core/call_site.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>

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

}  // namespace
}  // namespace sentinel
