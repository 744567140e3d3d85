#include "core/call_site.h"

#include <sched.h>

#include <dlfcn.h>
#include <link.h>
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
  Entry& entry = cache_[at];
  {
    const uint64_t n = entry.normalized.load(std::memory_order_relaxed);
    if (entry.check.load(std::memory_order_relaxed) == (pc ^ n ^ kCheckSalt)) return n;
  }
  uint64_t normalized = pc;
  // pc is a return address: pc - 1 lies inside the call instruction, inside the caller's module.
  // _dl_find_object is a lock-free lookup of the module; dladdr (the fallback) also searches the
  // module's symbol table, which costs a millisecond per address in a library as large as libtorch.
  dl_find_object found;
  if (_dl_find_object(reinterpret_cast<void*>(pc - 1), &found) == 0 && found.dlfo_link_map != nullptr) {
    const link_map* map = found.dlfo_link_map;
    const char* name = map->l_name != nullptr && map->l_name[0] != '\0' ? map->l_name : "<main>";
    normalized = hash_basename(name) ^ (pc - map->l_addr);
  } else {
    Dl_info info;
    if (::dladdr(reinterpret_cast<void*>(pc - 1), &info) != 0 && info.dli_fname != nullptr) {
      normalized = hash_basename(info.dli_fname) ^ (pc - reinterpret_cast<uintptr_t>(info.dli_fbase));
    }
  }
  entry.normalized.store(normalized, std::memory_order_relaxed);
  entry.check.store(pc ^ normalized ^ kCheckSalt, std::memory_order_relaxed);
  misses_.fetch_add(1, std::memory_order_relaxed);
  return normalized;
}

uint64_t CallSiteHasher::hash_frames(void* const* frames, int count) noexcept {
  uint64_t h = 0x243f6a8885a308d3ull;
  for (int i = 0; i < count; ++i) h = mix64(h ^ normalize(reinterpret_cast<uintptr_t>(frames[i])));
  return h;
}

namespace {

// The lowest and highest address of the loaded segments of the module that contains `address` (0, 0 when
// none does).
void module_range(const void* address, uintptr_t* lo_out, uintptr_t* hi_out) noexcept {
  struct Search {
    uintptr_t address;
    uintptr_t lo = 0, hi = 0;
  } search{reinterpret_cast<uintptr_t>(address)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (start < lo) lo = start;
          if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
        }
        if (s->address < lo || s->address >= hi) return 0;
        s->lo = lo;
        s->hi = hi;
        return 1;
      },
      &search);
  *lo_out = search.lo;
  *hi_out = search.hi;
}

}  // namespace

void CallSiteHasher::skip_module_of(const void* address_in_module) noexcept {
  module_range(address_in_module, &own_lo_, &own_hi_);
}

void CallSiteHasher::stop_at_module_of(const void* address_in_module) noexcept {
  if (address_in_module == nullptr) {
    stop_lo_ = stop_hi_ = 0;
    return;
  }
  module_range(address_in_module, &stop_lo_, &stop_hi_);
}

namespace {

// Counts a capture in progress for the fork handshake (seq_cst against fork_prepare's flag and wait).
class UnwindGuard {
 public:
  UnwindGuard(std::atomic<uint32_t>& count, const std::atomic<bool>& forking) noexcept : count_(count) {
    count_.fetch_add(1, std::memory_order_seq_cst);
    allowed_ = !forking.load(std::memory_order_seq_cst);
  }
  ~UnwindGuard() { count_.fetch_sub(1, std::memory_order_release); }
  UnwindGuard(const UnwindGuard&) = delete;
  UnwindGuard& operator=(const UnwindGuard&) = delete;
  bool allowed() const noexcept { return allowed_; }

 private:
  std::atomic<uint32_t>& count_;
  bool allowed_ = false;
};

}  // namespace

uint64_t CallSiteHasher::capture(uint32_t depth, uint32_t skip) noexcept {
  constexpr uint32_t kMaxOwn = 8;
  UnwindGuard guard(unwinding_, forking_);
  if (!guard.allowed()) return 0;  // a fork is being prepared: no unwind may be in progress across it
  void* frames[kMaxDepth + kMaxOwn];
  if (depth > kMaxDepth) depth = kMaxDepth;
  if (skip > kMaxOwn) skip = kMaxOwn;
  const int n = unw_backtrace(frames, static_cast<int>(depth + kMaxOwn));
  int first = static_cast<int>(skip);
  while (first < n && first < static_cast<int>(kMaxOwn) &&
         reinterpret_cast<uintptr_t>(frames[first]) - own_lo_ < own_hi_ - own_lo_) {
    ++first;
  }
  if (n <= first) return 0;
  int count = n - first < static_cast<int>(depth) ? n - first : static_cast<int>(depth);
  // Up to the interpreter's first frame, at least one frame (stop_at_module_of).
  for (int i = 1; i < count; ++i) {
    if (reinterpret_cast<uintptr_t>(frames[first + i]) - stop_lo_ < stop_hi_ - stop_lo_) {
      count = i;
      break;
    }
  }
  return hash_frames(frames + first, count);
}

void CallSiteHasher::fork_prepare() noexcept {
  // Captures started from now on return at once; those in progress finish first.
  forking_.store(true, std::memory_order_seq_cst);
  while (unwinding_.load(std::memory_order_seq_cst) != 0) sched_yield();
}

void CallSiteHasher::fork_parent() noexcept { forking_.store(false, std::memory_order_release); }

void CallSiteHasher::fork_child() noexcept {
  unwinding_.store(0, std::memory_order_relaxed);  // only the forking thread survives
  forking_.store(false, std::memory_order_release);
}

}  // namespace sentinel
