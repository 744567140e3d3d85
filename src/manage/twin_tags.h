// Persistent objects that share a tag. A tag is (call-site, occurrence in the step), so objects born in
// different steps at the same point of their step share it; when several of them live on (googlenet's
// parameters, allocated while the step detector had locked onto a 38-event set-up loop: 16 objects of one
// tag), a profile that keeps one object per tag counts one object's bytes for all of them, and the plan's
// decision for that tag moved all 16 (18 MiB against a 41 MiB budget: the fast pool stayed full and the
// prefetches and fast births of the plan were refused for the rest of the run).
// So when a profile begins (or a recorded one is put in force), every object alive before the step that
// shares its tag with another gets one of its own: the lowest key keeps the tag, the k-th other one takes
// twin_tag(tag, k). The profile then records each with its own size and accesses, and the executor places
// each by its own tag.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/hash.h"

namespace sentinel::manage {

// The tag of the k-th (k >= 1) further object alive with `tag`; never 0, never `tag`, never derived_tag(tag).
inline constexpr uint64_t twin_tag(uint64_t tag, uint32_t k) {
  const uint64_t t = mix64(tag ^ mix64(0x7a11ull + uint64_t{k} * 0x9e3779b97f4a7c15ull));
  return t == 0 || t == tag || t == derived_tag(tag) ? t ^ 0x1ull : t;
}

struct TwinRename {
  uint64_t key = 0;  // the object (instance key)
  uint64_t tag = 0;  // its new tag
};

// `objects`: (key, tag) of the objects alive before the step. Returns the renames that leave no two of
// them with one tag: in each group, the lowest key keeps the tag and the others, by key, take
// twin_tag(tag, k) for the smallest k whose tag no object has. The same objects give the same renames.
std::vector<TwinRename> twin_renames(std::vector<std::pair<uint64_t, uint64_t>> objects);

}  // namespace sentinel::manage
