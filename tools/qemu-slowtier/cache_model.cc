#include "cache_model.h"

#include <bit>

namespace sentinel::slowtier {

CacheModel::CacheModel(uint64_t capacity_bytes, uint32_t line_bytes, uint32_t ways, bool track_vaddrs)
    : line_shift_(static_cast<uint32_t>(std::countr_zero(line_bytes))), ways_(ways) {
  uint64_t sets = capacity_bytes / (uint64_t{line_bytes} * ways);
  sets = sets == 0 ? 1 : std::bit_floor(sets);
  set_mask_ = sets - 1;
  entries_.assign(sets * ways_, kEmpty);
  if (track_vaddrs) vaddrs_.assign(sets * ways_, 0);
}

CacheAccessResult CacheModel::access(uint64_t addr, bool is_store, uint64_t vaddr) {
  const uint64_t line = addr >> line_shift_;
  uint64_t* set = &entries_[(line & set_mask_) * ways_];
  CacheAccessResult result;
  uint32_t way = 0;
  for (; way < ways_; ++way) {
    if (set[way] != kEmpty && (set[way] >> 1) == line) break;
  }
  uint64_t entry;
  if (way < ways_) {
    result.hit = true;
    entry = set[way];
  } else {
    way = ways_ - 1;  // the least recently used way is the victim
    if (set[way] != kEmpty && (set[way] & kDirty) != 0) {
      result.wrote_back = true;
      result.written_back_line = set[way] >> 1;
    }
    entry = line << 1;
  }
  if (is_store) entry |= kDirty;
  // Move to front: shift the more recently used ways down by one.
  for (uint32_t w = way; w > 0; --w) set[w] = set[w - 1];
  set[0] = entry;
  if (!vaddrs_.empty()) {
    uint64_t* va = &vaddrs_[(line & set_mask_) * ways_];
    if (result.wrote_back) result.written_back_vaddr = va[way];
    const uint64_t kept = result.hit ? va[way] : 0;
    for (uint32_t w = way; w > 0; --w) va[w] = va[w - 1];
    va[0] = is_store ? vaddr : kept;
  }
  return result;
}

}  // namespace sentinel::slowtier
