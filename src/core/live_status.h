// The live status of a program running under Sentinel, shared through a small file: the runtime maps it
// and updates it from its service thread (SENTINEL_STATUS); `sentinel run` reads it to draw its status
// line. The file holds one LiveStatusFile at offset 0 in native byte order (reader and writer are on one
// machine).
//
// Consistency: a sequence counter (a seqlock): the writer makes it odd, writes the fields, makes it even;
// a reader copies the fields between two reads of an even, unchanged counter and retries otherwise.
// Ownership: the first process to claim the file (owner_pid from 0 to its pid) writes it; any other
// process that inherits SENTINEL_STATUS (a forked or spawned child) leaves it alone.
//
// Thread safety: one LiveStatusWriter per process, used by one thread (the service thread). Readers may
// run in other processes at any time. No function here allocates; all are async-signal-safe apart from
// the system calls they make.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace sentinel {

// What the status line shows. Strings are NUL-terminated and truncated to fit.
struct LiveStatus {
  char mode[16] = {};       // "track", "profile", "managed", ...
  char stage[32] = {};      // "detecting steps", "warm-up", "profiling", "planning", "managed", ...
  uint64_t steps = 0;       // complete training steps
  int64_t current_step = -1;
  uint64_t dram_bytes = 0;  // object bytes in fast memory now (all object bytes on a one-node machine)
  uint64_t budget_bytes = 0;  // fast-memory budget; 0: none
  uint64_t migrations = 0;    // object moves completed
  uint64_t migrated_bytes = 0;
  uint64_t managed_steps = 0;
  uint64_t late_prefetches = 0;
};

struct LiveStatusFile {
  static constexpr uint32_t kMagic = 0x53544c53;  // "SLTS"
  static constexpr uint32_t kVersion = 1;
  uint32_t magic;
  uint32_t version;
  std::atomic<int32_t> owner_pid;
  uint32_t reserved;
  std::atomic<uint64_t> seq;
  LiveStatus status;
};

class LiveStatusWriter {
 public:
  // Opens and maps the file, growing it to the record's size, and claims it. False when the file cannot
  // be opened or mapped, or another process owns it (then publish() does nothing).
  bool open(const char* path) noexcept;
  bool is_open() const noexcept { return file_ != nullptr; }
  void publish(const LiveStatus& status) noexcept;
  // Unmaps the file (the file itself stays; its creator removes it).
  void close() noexcept;

 private:
  LiveStatusFile* file_ = nullptr;
};

// Reads the status; false when the file does not exist, has not been written yet or kept changing.
bool read_live_status(const char* path, LiveStatus* out) noexcept;

}  // namespace sentinel
