// The system allocator behind Sentinel: the next definitions of the malloc family after
// libsentinel.so in symbol lookup order (normally glibc's), found with dlsym(RTLD_NEXT).
//
// dlsym may itself allocate (dlerror state); while the symbols are being resolved those requests are
// served from a small static bootstrap buffer and never reach the system allocator. Pointers from that
// buffer are recognised by address and are never passed to the system free().
//
// Thread safety: resolution is idempotent and may race harmlessly; all functions are thread-safe.
#pragma once

#include <cstddef>

namespace sentinel {

struct RealMalloc {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void*);
};

// The resolved functions, resolving them on first use.
const RealMalloc& real_malloc() noexcept;

// True while this thread is inside dlsym() resolving the functions above.
bool resolving_real_malloc() noexcept;

// Bootstrap buffer used during resolution.
void* bootstrap_alloc(size_t size, size_t align) noexcept;
bool is_bootstrap_pointer(const void* p) noexcept;
// Bytes of the bootstrap buffer from p to its end (an upper bound on the size of p's block).
size_t bootstrap_bytes_after(const void* p) noexcept;

}  // namespace sentinel
