#include "topo/slow_arena.h"

#include <memkind.h>
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "os/os.h"

namespace sentinel::topo {

std::unique_ptr<SlowArena> SlowArena::create(int node, size_t capacity, std::string* error) {
  if (numa_available() < 0) {
    *error = "libnuma: NUMA not available";
    return nullptr;
  }
  if (node < 0 || node > numa_max_node() || numa_node_size64(node, nullptr) <= 0) {
    *error = "node " + std::to_string(node) + " does not exist or has no memory";
    return nullptr;
  }
  constexpr size_t kAlign = size_t{2} << 20;
  if (capacity == 0) capacity = kAlign;
  capacity = (capacity + kAlign - 1) & ~(kAlign - 1);
  void* base = os::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    *error = std::string("mmap: ") + std::strerror(errno);
    return nullptr;
  }
  // Bind before memkind (or anyone) touches a page, so every page faults in on `node`.
  unsigned long mask[16] = {};
  if (node >= static_cast<int>(sizeof(mask) * 8)) {
    os::munmap(base, capacity);
    *error = "node id too large";
    return nullptr;
  }
  mask[node / 64] |= 1ul << (node % 64);
  if (os::mbind(base, capacity, MPOL_BIND, mask, sizeof(mask) * 8, 0) != 0) {
    *error = std::string("mbind: ") + std::strerror(errno);
    os::munmap(base, capacity);
    return nullptr;
  }
  memkind_t kind = nullptr;
  int err = memkind_create_fixed(base, capacity, &kind);
  if (err != MEMKIND_SUCCESS) {
    char msg[MEMKIND_ERROR_MESSAGE_SIZE];
    memkind_error_message(err, msg, sizeof(msg));
    *error = std::string("memkind_create_fixed: ") + msg;
    os::munmap(base, capacity);
    return nullptr;
  }
  return std::unique_ptr<SlowArena>(new SlowArena(node, base, capacity, kind));
}

SlowArena::~SlowArena() {
  memkind_destroy_kind(kind_);
  os::munmap(base_, capacity_);
}

void* SlowArena::alloc(size_t size) { return memkind_malloc(kind_, size); }

void SlowArena::free(void* ptr) {
  if (ptr != nullptr) memkind_free(kind_, ptr);
}

size_t SlowArena::usable_size(void* ptr) { return memkind_malloc_usable_size(kind_, ptr); }

bool SlowArena::owns(const void* ptr) const {
  auto p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(base_);
  return p >= b && p < b + capacity_;
}

}  // namespace sentinel::topo
