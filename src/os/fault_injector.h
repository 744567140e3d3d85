// Fault injection at the kernel boundary: a replacement for the OS layer's table (os/os.h) that makes
// calls fail at random, deterministically for a seed, and otherwise forwards them to the table that was
// active before. Used by the host tests, and by the fault-injection build of the preload
// (libsentinel-faults.so, built only with the CMake option SENTINEL_FAULT_INJECTION=ON), which reads
// SENTINEL_FAULT_INJECT=seed:rate[:op,op,...]. The production libsentinel.so does not contain this code.
//
// What a failure looks like, per call (errno values are ones the kernel really returns for that call):
//   mmap            MAP_FAILED, ENOMEM or EAGAIN
//   madvise         -1, EAGAIN, ENOMEM or EINVAL; nothing done
//   mprotect        -1, ENOMEM (VMA limit); only calls that take access away (PROT_NONE): a failed
//                   restore would leave the program's own pages inaccessible, which no kernel does for
//                   a call that merges mappings back
//   mincore         -1, ENOMEM or EAGAIN
//   mbind           -1, ENOMEM, EIO, EFAULT or EPERM; the policy is not changed
//   get_mempolicy   -1, EFAULT or EINVAL
//   move_pages      either the whole call fails (-1: ENOMEM, EPERM, EFAULT or EACCES; nothing moved), or,
//                   for calls that move pages, the call succeeds partially: some pages get a negative
//                   status (-EBUSY, -ENOMEM or -EACCES) and stay exactly where they were (they are left out
//                   of the real call), the others are moved by the kernel
//   perf_event_open -1, EACCES, ENOENT, EMFILE or ENODEV
//   open_read/read  -1, EACCES/ENOENT/EMFILE (open) or EIO (read)
//   munmap, close   never failed (a failure could only leak; nothing to recover)
//
// Thread safety: start/stop are not thread-safe with each other (call them from one thread, when no
// other thread is inside a Sentinel call, or accept that a racing call sees either table). The
// injecting calls themselves are lock-free and allocation-free (random numbers come from a counter
// hashed with the seed), so they may run inside malloc/free.
#pragma once

#include <cstdint>

#include "os/os.h"

namespace sentinel::os {

enum class Op : uint8_t {
  kMmap,
  kMunmap,
  kMadvise,
  kMprotect,
  kMincore,
  kMbind,
  kGetMempolicy,
  kMovePages,
  kPerfEventOpen,
  kOpenRead,
  kRead,
  kClose,
  kMremap,
  kCount
};
inline constexpr int kNumOps = static_cast<int>(Op::kCount);
const char* op_name(Op op) noexcept;
inline constexpr uint32_t op_bit(Op op) { return 1u << static_cast<unsigned>(op); }
// Every call that is ever failed (all but munmap and close).
inline constexpr uint32_t kAllFailableOps = ((1u << kNumOps) - 1) & ~op_bit(Op::kMunmap) & ~op_bit(Op::kClose);

struct FaultConfig {
  uint64_t seed = 1;
  double rate = 0.05;               // probability that one call (of an op in `ops`) fails
  uint32_t ops = kAllFailableOps;   // op_bit()s of the calls that may fail
  double partial_share = 0.5;       // of failing move_pages calls that move pages: share failed per page
};

struct FaultCounts {
  uint64_t calls[kNumOps] = {};       // calls seen while injecting
  uint64_t failed[kNumOps] = {};      // calls failed as a whole
  uint64_t partial_move_pages = 0;    // move_pages calls that failed some pages
  uint64_t pages_failed = 0;          // pages given a negative status by partial failures
  uint64_t total_failed() const;
};

// Parses "seed:rate" or "seed:rate:op,op,..." (op names as op_name(): mmap, madvise, mprotect, mincore,
// mbind, get_mempolicy, move_pages, perf_event_open, open, read, mremap). rate is a decimal in [0, 1].
// No allocation. Returns false on anything malformed.
bool parse_fault_spec(const char* text, FaultConfig* out) noexcept;

// Installs the injecting table over the active one (which it forwards to) and resets the counts.
// Returns false if injection is already running.
bool start_fault_injection(const FaultConfig& config) noexcept;
// Restores the table that was active before start. Counts stay readable.
void stop_fault_injection() noexcept;
bool fault_injection_running() noexcept;
FaultCounts fault_counts() noexcept;

// RAII for tests: injects for the lifetime of the object.
class ScopedFaultInjection {
 public:
  explicit ScopedFaultInjection(const FaultConfig& config) noexcept { started_ = start_fault_injection(config); }
  ~ScopedFaultInjection() {
    if (started_) stop_fault_injection();
  }
  ScopedFaultInjection(const ScopedFaultInjection&) = delete;
  ScopedFaultInjection& operator=(const ScopedFaultInjection&) = delete;
  bool started() const { return started_; }

 private:
  bool started_ = false;
};

}  // namespace sentinel::os
