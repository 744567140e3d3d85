// The system allocator behind Sentinel: the next definitions of the malloc family after
// libsentinel.so in symbol lookup order (normally glibc's), found with dlsym(RTLD_NEXT).
//
// dlsym may itself allocate (dlerror state); while the symbols are being resolved those requests are
// served from a small static bootstrap buffer and never reach the system allocator. Pointers from that
// buffer are recognised by address and are never passed to the system free().
//
// Thread safety: resolution is idempotent and may race harmlessly; all functions are thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

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
const RealMalloc& resolve_real_malloc() noexcept;

extern RealMalloc g_real_malloc;
extern std::atomic<bool> g_real_malloc_resolved;

// Hot path: one acquire load once resolved.
inline const RealMalloc& real_malloc() noexcept {
  if (__builtin_expect(g_real_malloc_resolved.load(std::memory_order_acquire), 1)) return g_real_malloc;
  return resolve_real_malloc();
}
inline bool real_malloc_ready() noexcept { return g_real_malloc_resolved.load(std::memory_order_acquire); }

// True while this thread is inside dlsym() resolving the functions above.
bool resolving_real_malloc() noexcept;

// Bootstrap buffer used during resolution.
void* bootstrap_alloc(size_t size, size_t align) noexcept;
inline constexpr size_t kBootstrapBytes = 64 * 1024;
extern unsigned char g_bootstrap[kBootstrapBytes];
inline bool is_bootstrap_pointer(const void* p) noexcept {
  return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_bootstrap) < kBootstrapBytes;
}
// Bytes of the bootstrap buffer from p to its end (an upper bound on the size of p's block).
size_t bootstrap_bytes_after(const void* p) noexcept;

// The malloc family of the system allocator as a program would see it without Sentinel, with requests
// made while the functions are being resolved served from the bootstrap buffer (and bootstrap pointers
// never handed to the system free). Out of line, in this file's translation unit: a sanitizer build
// compiles it uninstrumented (preload/CMakeLists.txt), as it runs before the sanitizer's runtime is up.
void* system_malloc(size_t size) noexcept;
void system_free(void* p) noexcept;
void* system_calloc(size_t n, size_t size) noexcept;
void* system_realloc(void* p, size_t size) noexcept;
int system_posix_memalign(void** out, size_t align, size_t size) noexcept;
void* system_aligned_alloc(size_t align, size_t size) noexcept;
void* system_memalign(size_t align, size_t size) noexcept;
void* system_valloc(size_t size) noexcept;
void* system_pvalloc(size_t size) noexcept;
size_t system_malloc_usable_size(void* p) noexcept;

// malloc and free of the system allocator on the hot path (the exported malloc and free inline them):
// once resolved, one load and an indirect tail call; the cases above otherwise. In a sanitizer build
// they run in the uninstrumented override.cc and touch no memory but these globals.
inline void* fast_system_malloc(size_t size) noexcept {
  if (__builtin_expect(real_malloc_ready(), 1)) return g_real_malloc.malloc(size);
  return system_malloc(size);
}
inline void fast_system_free(void* p) noexcept {
  if (__builtin_expect(real_malloc_ready() && !is_bootstrap_pointer(p), 1)) return g_real_malloc.free(p);
  system_free(p);
}

}  // namespace sentinel
