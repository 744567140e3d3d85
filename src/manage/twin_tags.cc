#include "manage/twin_tags.h"

#include <algorithm>
#include <unordered_set>

namespace sentinel::manage {

std::vector<TwinRename> twin_renames(std::vector<std::pair<uint64_t, uint64_t>> objects) {
  // By tag, then key: each group's first object keeps its tag.
  std::sort(objects.begin(), objects.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  std::vector<TwinRename> renames;
  std::unordered_set<uint64_t> taken;
  for (const auto& [key, tag] : objects) taken.insert(tag);
  for (size_t i = 1; i < objects.size(); ++i) {
    if (objects[i].second != objects[i - 1].second) continue;
    // objects[i] is a further object of its group; k counts up from 1 past tags in use.
    const uint64_t tag = objects[i].second;
    uint32_t k = 1;
    while (taken.count(twin_tag(tag, k)) != 0) ++k;
    taken.insert(twin_tag(tag, k));
    renames.push_back(TwinRename{objects[i].first, twin_tag(tag, k)});
  }
  return renames;
}

}  // namespace sentinel::manage
