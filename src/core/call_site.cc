#include "core/call_site.h"

#include <dlfcn.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "core/hash.h"

namespace sentinel {
namespace {

uint64_t hash_basename(const char* path) {
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const char* p = base; *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
  return h;
}

}  // namespace

uint64_t CallSiteHasher::normalize(uintptr_t pc) noexcept {
  const uint32_t at = static_cast<uint32_t>(mix64(pc)) & (kCacheSize - 1);
  {
    SpinGuard guard(lock_);
    if (cache_[at].pc == pc) return cache_[at].normalized;
  }
  uint64_t normalized = pc;
  Dl_info info;
  // pc is a return address: pc - 1 lies inside the call instruction, inside the caller's module.
  if (::dladdr(reinterpret_cast<void*>(pc - 1), &info) != 0 && info.dli_fname != nullptr) {
    normalized = hash_basename(info.dli_fname) ^ (pc - reinterpret_cast<uintptr_t>(info.dli_fbase));
  }
  SpinGuard guard(lock_);
  cache_[at] = Entry{pc, normalized};
  ++misses_;
  return normalized;
}

uint64_t CallSiteHasher::hash_frames(void* const* frames, int count) noexcept {
  uint64_t h = 0x243f6a8885a308d3ull;
  for (int i = 0; i < count; ++i) h = mix64(h ^ normalize(reinterpret_cast<uintptr_t>(frames[i])));
  return h;
}

uint64_t CallSiteHasher::capture(uint32_t depth, uint32_t skip) noexcept {
  void* frames[kMaxDepth + 8];
  if (depth > kMaxDepth) depth = kMaxDepth;
  if (skip > 8) skip = 8;
  const int n = unw_backtrace(frames, static_cast<int>(depth + skip));
  if (n <= static_cast<int>(skip)) return 0;
  return hash_frames(frames + skip, n - static_cast<int>(skip));
}

}  // namespace sentinel
