// SlowArena: a heap for small, long-lived objects whose pages live on one NUMA node (the slow
// tier), for data too small to get an extent of its own (the object threshold is 64 KiB).
//
// This is the ONLY file pair in Sentinel that talks to memkind (upstream development stopped in
// 2024, so it must stay replaceable). It uses memkind's "fixed" kind: Sentinel maps the area,
// binds it to the node with mbind(MPOL_BIND), and memkind (jemalloc) manages allocations inside.
// Pages are placed on the node when first touched; when the node is full, touching a new page of
// the arena fails like any MPOL_BIND fault (the kernel's OOM handling), so keep capacity within
// the node's free memory.
//
// Thread safety: alloc/free/usable_size/owns are thread-safe (memkind locks internally).
// create/destroy are not: no allocation may be in flight while the arena is destroyed.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

struct memkind;

namespace sentinel::topo {

class SlowArena {
 public:
  // Maps `capacity` bytes (rounded up to 2 MiB) bound to `node`. Returns nullptr with *error if
  // the node does not exist, has no memory, or memkind refuses the area.
  static std::unique_ptr<SlowArena> create(int node, size_t capacity, std::string* error);
  ~SlowArena();
  SlowArena(const SlowArena&) = delete;
  SlowArena& operator=(const SlowArena&) = delete;

  void* alloc(size_t size);  // nullptr when the arena is exhausted
  void free(void* ptr);      // ptr from alloc() of this arena, or nullptr
  size_t usable_size(void* ptr);
  bool owns(const void* ptr) const;
  int node() const { return node_; }
  size_t capacity() const { return capacity_; }

 private:
  SlowArena(int node, void* base, size_t capacity, struct memkind* kind)
      : node_(node), base_(base), capacity_(capacity), kind_(kind) {}
  int node_;
  void* base_;
  size_t capacity_;
  struct memkind* kind_;
};

}  // namespace sentinel::topo
