#include "real_malloc.h"

#include <dlfcn.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "core/size_class.h"

namespace sentinel {
namespace {

std::atomic<size_t> g_bootstrap_used{0};

thread_local bool t_resolving __attribute__((tls_model("initial-exec"))) = false;

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

alignas(64) unsigned char g_bootstrap[kBootstrapBytes];
RealMalloc g_real_malloc{};
std::atomic<bool> g_real_malloc_resolved{false};

void* bootstrap_alloc(size_t size, size_t align) noexcept {
  if (align < 16) align = 16;
  size_t used = g_bootstrap_used.load(std::memory_order_relaxed);
  for (;;) {
    const size_t start = (used + align - 1) & ~(align - 1);
    if (start > sizeof g_bootstrap || size > sizeof g_bootstrap - start) return nullptr;
    if (g_bootstrap_used.compare_exchange_weak(used, start + size, std::memory_order_relaxed)) {
      return g_bootstrap + start;  // static storage: already zero, as calloc needs
    }
  }
}

size_t bootstrap_bytes_after(const void* p) noexcept {
  return sizeof g_bootstrap - (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_bootstrap));
}

bool resolving_real_malloc() noexcept { return t_resolving; }

const RealMalloc& resolve_real_malloc() noexcept {
  if (g_real_malloc_resolved.load(std::memory_order_acquire)) return g_real_malloc;
  t_resolving = true;
  RealMalloc r;
  r.malloc = next<decltype(r.malloc)>("malloc");
  r.free = next<decltype(r.free)>("free");
  r.calloc = next<decltype(r.calloc)>("calloc");
  r.realloc = next<decltype(r.realloc)>("realloc");
  r.posix_memalign = next<decltype(r.posix_memalign)>("posix_memalign");
  r.aligned_alloc = next<decltype(r.aligned_alloc)>("aligned_alloc");
  r.memalign = next<decltype(r.memalign)>("memalign");
  r.valloc = next<decltype(r.valloc)>("valloc");
  r.pvalloc = next<decltype(r.pvalloc)>("pvalloc");
  r.malloc_usable_size = next<decltype(r.malloc_usable_size)>("malloc_usable_size");
  t_resolving = false;
  g_real_malloc = r;
  g_real_malloc_resolved.store(true, std::memory_order_release);
  return g_real_malloc;
}

void* system_malloc(size_t size) noexcept {
  if (__builtin_expect(real_malloc_ready(), 1)) return g_real_malloc.malloc(size);
  if (resolving_real_malloc()) return bootstrap_alloc(size, 16);
  return real_malloc().malloc(size);
}

void system_free(void* p) noexcept {
  if (p == nullptr || is_bootstrap_pointer(p)) return;
  real_malloc().free(p);
}

void* system_calloc(size_t n, size_t size) noexcept {
  if (!real_malloc_ready() && resolving_real_malloc()) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) return nullptr;
    return bootstrap_alloc(total, 16);
  }
  return real_malloc().calloc(n, size);
}

void* system_realloc(void* p, size_t size) noexcept {
  if (is_bootstrap_pointer(p)) {
    // Block sizes are not recorded for the bootstrap buffer; copying up to its end is always in bounds
    // and covers the old block.
    void* q = system_malloc(size);
    const size_t available = bootstrap_bytes_after(p);
    if (q != nullptr) __builtin_memcpy(q, p, available < size ? available : size);
    return q;
  }
  return real_malloc().realloc(p, size);
}

int system_posix_memalign(void** out, size_t align, size_t size) noexcept {
  if (!real_malloc_ready() && resolving_real_malloc()) {
    void* p = bootstrap_alloc(size, align);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
  }
  return real_malloc().posix_memalign(out, align, size);
}

void* system_aligned_alloc(size_t align, size_t size) noexcept {
  if (!real_malloc_ready() && resolving_real_malloc()) return bootstrap_alloc(size, align);
  return real_malloc().aligned_alloc(align, size);
}

void* system_memalign(size_t align, size_t size) noexcept {
  if (!real_malloc_ready() && resolving_real_malloc()) return bootstrap_alloc(size, align);
  return real_malloc().memalign(align, size);
}

void* system_valloc(size_t size) noexcept {
  if (!real_malloc_ready() && resolving_real_malloc()) return bootstrap_alloc(size, kPageSize);
  return real_malloc().valloc(size);
}

void* system_pvalloc(size_t size) noexcept {
  if (!real_malloc_ready() && resolving_real_malloc()) {
    const size_t rounded = size <= kBootstrapBytes ? (size + kPageSize - 1) & ~(kPageSize - 1) : size;
    return bootstrap_alloc(rounded == 0 ? kPageSize : rounded, kPageSize);
  }
  return real_malloc().pvalloc(size);
}

size_t system_malloc_usable_size(void* p) noexcept {
  if (p == nullptr || is_bootstrap_pointer(p)) return 0;
  return real_malloc().malloc_usable_size(p);
}

}  // namespace sentinel
