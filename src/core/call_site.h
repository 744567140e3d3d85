// Call-site identification: a hash of the innermost frames of the allocating call stack.
//
// Return addresses are made module-relative (hash of the module's file name plus the offset), so the
// same call-site gets the same hash in every run despite address-space randomisation, and profiles
// recorded in one run describe the next. Resolving an address to its module (_dl_find_object, dladdr) is
// cached in a fixed table that takes no lock: each entry is two words, the value and a check word (the
// address xor the value xor a constant), written and read with relaxed atomics; a reader accepts an
// entry only if the check matches the address it looks for, so an entry torn by two writers (or read
// while written) is a miss, not a wrong value. (The lockless transposition table of chess programs.)
// A wrong hit would need two different entries whose words xor to the looked-for address: the check is
// 64 bits wide.
//
// Thread safety: capture(), normalize(), hash_frames() and cache_misses() may be called from any thread
// concurrently; they take no lock. They never allocate (libunwind's local unwinder uses its own
// mmap-backed pools).
#pragma once

#include <atomic>
#include <cstdint>


namespace sentinel {

class CallSiteHasher {
 public:
  static constexpr uint32_t kMaxDepth = 32;

  // Hash of up to `depth` frames of the caller's stack after skipping the `skip` innermost frames and
  // then every further innermost frame inside the module set by skip_module_of() (Sentinel's own
  // frames: how many there are depends on inlining and tail calls, so they are found by address).
  // Returns 0 only when no frame could be read.
  uint64_t capture(uint32_t depth, uint32_t skip) noexcept;

  // Frames whose address lies in the loaded module that contains `address_in_module` are skipped at
  // the inner end of every captured stack. Call once, before capture() is used concurrently.
  void skip_module_of(const void* address_in_module) noexcept;
  // The hash ends before the first frame (after the skipped ones) inside the loaded module that contains
  // `address_in_module`: the Python interpreter's. Its frames above a call into native code say which
  // kind of bytecode instruction made the call, and CPython (3.11 on) specialises an instruction after it
  // has run a few times (a CALL becomes CALL_BUILTIN_FAST_WITH_KEYWORDS), which changes those return
  // addresses once, a few training steps in: the call-site of every tensor allocated straight from Python
  // code (torch.compile's generated wrapper: torch.empty_strided) would change. What lies below them
  // (the Python source line) is not in the native stack anyway. A stack whose first frame is in that
  // module (the interpreter allocating for itself) hashes that one frame. Call once, before capture() is
  // used concurrently; a null address (no such module) leaves every stack whole.
  void stop_at_module_of(const void* address_in_module) noexcept;

  // Hash of an explicit list of return addresses (for tests and for capture()).
  uint64_t hash_frames(void* const* frames, int count) noexcept;

  // Module-relative, run-stable identity of one code address.
  uint64_t normalize(uintptr_t pc) noexcept;

  uint64_t cache_misses() const noexcept { return misses_.load(std::memory_order_relaxed); }

  // fork(): no unwind may be in progress when the process forks (libunwind's own locks would be inherited
  // taken, and the child's first object allocation would hang in unw_backtrace). While a fork is being
  // prepared, capture() returns 0 at once instead of unwinding.
  void fork_prepare() noexcept;
  void fork_parent() noexcept;
  void fork_child() noexcept;

 private:
  static constexpr uint32_t kCacheSize = 4096;  // power of two
  static constexpr uint64_t kCheckSalt = 0x9e3779b97f4a7c15ull;  // an empty entry (0, 0) checks no address
  struct Entry {
    std::atomic<uint64_t> normalized{0};
    std::atomic<uint64_t> check{0};  // pc ^ normalized ^ kCheckSalt
  };
  uintptr_t own_lo_ = 0;  // [own_lo_, own_hi_): the skipped module's mapped segments
  uintptr_t own_hi_ = 0;
  uintptr_t stop_lo_ = 0;  // [stop_lo_, stop_hi_): the module whose frames end a stack's hash
  uintptr_t stop_hi_ = 0;
  Entry cache_[kCacheSize] = {};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint32_t> unwinding_{0};  // captures in progress
  std::atomic<bool> forking_{false};
};

}  // namespace sentinel
