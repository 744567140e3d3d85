// A set-associative, write-back, write-allocate cache with LRU replacement, one per vCPU: it decides
// which guest memory accesses miss and so reach a memory node. Addresses are line numbers in the
// plugin's RAM address space (node_map.h), so a line's node is a function of its address.
//
// Thread safety: none; each vCPU owns its own CacheModel and only its thread touches it.
// Invariants: sets() is a power of two; within a set the ways are ordered most recently used first;
// an empty way holds kEmpty.
#pragma once

#include <cstdint>
#include <vector>

namespace sentinel::slowtier {

struct CacheAccessResult {
  bool hit = false;
  // A dirty line was evicted to make room: its memory gets a write-back.
  bool wrote_back = false;
  uint64_t written_back_line = 0;
  // With vaddr tracking: the virtual address of the store that last dirtied the evicted line (the
  // emulated PMU attributes the write-back to the object there); 0 otherwise.
  uint64_t written_back_vaddr = 0;
};

class CacheModel {
 public:
  // capacity_bytes / (line_bytes * ways) is rounded down to a power of two sets (at least one).
  // REQUIRES: line_bytes a power of two, ways >= 1. track_vaddrs: keep, next to every line, the
  // virtual address of the last store to it (one more word per line, moved with the line).
  CacheModel(uint64_t capacity_bytes, uint32_t line_bytes, uint32_t ways, bool track_vaddrs = false);

  // One access to byte address `addr` (virtual address `vaddr`); a store marks the line dirty.
  CacheAccessResult access(uint64_t addr, bool is_store, uint64_t vaddr = 0);

  uint32_t line_shift() const { return line_shift_; }
  uint64_t sets() const { return set_mask_ + 1; }
  uint32_t ways() const { return ways_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr uint64_t kDirty = 1;  // low bit of a stored entry; entries are line << 1

  uint32_t line_shift_;
  uint32_t ways_;
  uint64_t set_mask_;
  std::vector<uint64_t> entries_;  // sets() * ways_ entries, (line << 1) | dirty
  std::vector<uint64_t> vaddrs_;   // empty, or parallel to entries_: the last store's virtual address
};

}  // namespace sentinel::slowtier
