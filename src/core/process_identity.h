// Who this process is among the processes of a job: pid, rank, world size, host name, and the kernel's
// start time of a pid (which, with the pid, names one process even after the pid is reused).
//
// Used at configuration time (output path patterns) and by the host ledger (liveness of a rank that
// holds a share). Nothing here allocates; the functions make only a few system calls (gethostname,
// open/read of /proc/<pid>/stat, kill(pid, 0)), so they are safe during the first malloc, but not on
// the allocation path. All functions are thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace sentinel {

struct ProcessIdentity {
  static constexpr size_t kHostMax = 65;  // HOST_NAME_MAX + 1
  int64_t pid = 0;
  int64_t rank = -1;        // RANK, else LOCAL_RANK, else -1 (not part of a launched job)
  int64_t local_rank = -1;  // LOCAL_RANK, -1 when not set
  int64_t world_size = 0;   // WORLD_SIZE, 0 when not set
  char host[kHostMax] = {};
};

using IdentityLookup = const char* (*)(const char* name, void* ctx);

// Reads RANK, LOCAL_RANK and WORLD_SIZE through `lookup` (values that are not decimal integers count
// as unset) and takes pid and host as given.
ProcessIdentity identity_from(IdentityLookup lookup, void* ctx, int64_t pid, const char* host) noexcept;

// The identity of this process: the environment, getpid() and gethostname().
ProcessIdentity current_identity() noexcept;

// The kernel's start time of `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot); 0 when the
// process does not exist or the file cannot be read.
uint64_t process_start_time(pid_t pid) noexcept;

// Whether the process `pid` that started at `start_time` still exists (a reused pid has another start
// time). A zombie still counts as alive until it is reaped.
bool process_alive(pid_t pid, uint64_t start_time) noexcept;

}  // namespace sentinel
