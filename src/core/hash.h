#pragma once

#include <cstdint>

namespace sentinel {

// A 64-bit finaliser with good avalanche (the splitmix64 constants), for combining call-site parts.
inline constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The tag of an object: its call-site and how many objects that call-site allocated earlier in the step.
inline constexpr uint64_t make_tag(uint64_t site, uint32_t occurrence) {
  return mix64(site ^ mix64(uint64_t{occurrence} + 0x9e3779b97f4a7c15ull));
}

// The tag under which a profile records a step-local object whose tag a persistent object already has (a
// gradient buffer allocated in the first step and kept shares its call-site and occurrence with the
// step-local buffers of later steps), so tags stay unique in a profile. The profile builder derives it, and
// the runtime derives it again to recognise such an object (manage/compiled_plan.h, plan_tag); inline because
// the allocation path asks.
inline constexpr uint64_t derived_tag(uint64_t tag) { return mix64(tag ^ 0x5e17e1ull); }

}  // namespace sentinel
