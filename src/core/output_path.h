// Output paths of one process among many: patterns and the rule that keeps processes of one job from
// writing the same file (docs/distributed.md).
//
// A path variable (SENTINEL_STATS, SENTINEL_PROFILE_OUT, SENTINEL_TIMELINE, SENTINEL_TRACE,
// SENTINEL_LOG_FILE) may contain
//   %p  the process id          %r  the rank (RANK, else LOCAL_RANK; 0 when neither is set)
//   %h  the host name           %%  a percent sign
// Any other '%' sequence is an error. The path is resolved once, at configuration time:
//   1. the pattern is expanded;
//   2. with %p the path is this process's alone: done;
//   3. in a job of several ranks (WORLD_SIZE > 1, rank known) a path without %r gets ".r<rank>" appended;
//   4. the path is claimed for this process (OutputClaims); when another live process already holds the
//      claim, ".<pid>" is appended. A claim of a process that died is taken over.
// Every suffix added in steps 3 and 4 is reported in a note (one line), which the runtime logs.
//
// Nothing here allocates. OutputClaims makes system calls (open, read, write, unlink, getcwd), so it
// runs at configuration and exit time, never on the allocation path. Thread safety: expand_output_path
// is pure; an OutputClaims object is used by one thread at a time (configuration, then exit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/process_identity.h"

namespace sentinel {

// Expands the pattern into out[0..cap). False with *why (a static string) for an unknown '%' sequence
// or when the result does not fit.
bool expand_output_path(const char* pattern, const ProcessIdentity& id, char* out, size_t cap,
                        const char** why) noexcept;

// Whether the pattern names a path per process (%p) or per rank (%r).
bool pattern_has(const char* pattern, char conversion) noexcept;

// A file shared by the processes of job `job` on host `host`: "<dir>/sentinel-<kind>-<16 hex digits of a
// hash of job and host>". False when it does not fit in out[0..cap).
bool job_file_path(const char* dir, const char* kind, const char* job, const char* host, char* out,
                   size_t cap) noexcept;

// Claims of output paths, held as files "<dir>/sentinel-out-<hash of the absolute path>" containing the
// holder's pid and start time. The claim files are removed by release_all() at the holder's exit; a
// claim left behind by a killed process is taken over by the next process that wants the path.
class OutputClaims {
 public:
  static constexpr size_t kMaxClaims = 8;
  static constexpr size_t kNameMax = 320;

  // `dir` must outlive the object (a string literal, or a test's directory).
  explicit constexpr OutputClaims(const char* dir) noexcept : dir_(dir) {}

  // Claims `path` for (pid, start_time). True when this process holds the claim afterwards (new, taken
  // over from a dead holder, or already its own); false when another live process holds it, or when
  // the claim cannot be made at all (claim directory missing: then *why says so and nothing is known).
  bool claim(const char* path, int64_t pid, uint64_t start_time, const char** why) noexcept;

  // Removes the claim files this process (pid) made. Claims another process holds are left alone (a
  // forked child calling this removes nothing of its parent's).
  void release_all(int64_t pid) noexcept;

 private:
  bool claim_name(const char* path, char* name, size_t cap) const noexcept;

  const char* dir_;
  char names_[kMaxClaims][kNameMax] = {};
  int64_t owners_[kMaxClaims] = {};
  size_t count_ = 0;
};

// Resolves one output path variable in place (buf holds the pattern on entry and the path on return,
// capacity cap) following the rule above. `claims` may be null (no step 4). Appends to note[0..note_cap)
// one line per suffix added, naming `variable`. False with *why when the pattern is invalid or the
// result does not fit.
bool resolve_output_path(const char* variable, char* buf, size_t cap, const ProcessIdentity& id,
                         uint64_t start_time, OutputClaims* claims, char* note, size_t note_cap,
                         const char** why) noexcept;

}  // namespace sentinel
