// The libc-facing names, and nothing else: each one maps to its implementation in runtime.cc.
// Keeping the names here makes it easy to see what Sentinel interposes.
#include <cstddef>

#include "runtime.h"
#include "signals.h"

#define SENTINEL_EXPORT extern "C" __attribute__((visibility("default")))

SENTINEL_EXPORT void* malloc(size_t size) noexcept { return sentinel::rt::malloc(size); }
SENTINEL_EXPORT void free(void* p) noexcept { sentinel::rt::free(p); }
SENTINEL_EXPORT void* calloc(size_t n, size_t size) noexcept { return sentinel::rt::calloc(n, size); }
SENTINEL_EXPORT void* realloc(void* p, size_t size) noexcept { return sentinel::rt::realloc(p, size); }
SENTINEL_EXPORT void* reallocarray(void* p, size_t n, size_t size) noexcept {
  return sentinel::rt::reallocarray(p, n, size);
}
SENTINEL_EXPORT int posix_memalign(void** out, size_t align, size_t size) noexcept {
  return sentinel::rt::posix_memalign(out, align, size);
}
SENTINEL_EXPORT void* aligned_alloc(size_t align, size_t size) noexcept {
  return sentinel::rt::aligned_alloc(align, size);
}
SENTINEL_EXPORT void* memalign(size_t align, size_t size) noexcept {
  return sentinel::rt::memalign(align, size);
}
SENTINEL_EXPORT void* valloc(size_t size) noexcept { return sentinel::rt::valloc(size); }
SENTINEL_EXPORT void* pvalloc(size_t size) noexcept { return sentinel::rt::pvalloc(size); }
SENTINEL_EXPORT size_t malloc_usable_size(void* p) noexcept { return sentinel::rt::malloc_usable_size(p); }

SENTINEL_EXPORT int sigaction(int signum, const struct sigaction* act, struct sigaction* old) noexcept {
  return sentinel::rt::sigaction(signum, act, old);
}
SENTINEL_EXPORT int sigaltstack(const stack_t* ss, stack_t* old) noexcept {
  return sentinel::rt::sigaltstack(ss, old);
}
SENTINEL_EXPORT sighandler_t signal(int signum, sighandler_t handler) noexcept {
  return sentinel::rt::signal(signum, handler);
}

// Runs before main (after libc is ready); allocations made earlier simply go to the system allocator.
__attribute__((constructor)) static void sentinel_constructor() { sentinel::rt::initialise(); }
