#include "real_malloc.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>

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
    if (start + size > sizeof g_bootstrap) return nullptr;
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

}  // namespace sentinel
