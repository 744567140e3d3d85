// Output files that cannot be turned against the user who runs Sentinel: every file Sentinel writes
// (stats, profiles, timelines, plans, traces) goes through OutputFile, the log through
// open_append_no_follow.
//
// - The data goes to a fresh temporary file in the target's directory and is renamed onto the target
//   only when complete (after fsync). A crash at any moment leaves the old file or no file at the
//   target, never a truncated one; rename replaces a symlink planted at the target instead of writing
//   through it.
// - The temporary is an unnamed file (O_TMPFILE) where the file system has them, given a name only
//   just before the rename: a process killed while writing leaves no temporary behind. Elsewhere it
//   is created named, with O_CREAT|O_EXCL and O_NOFOLLOW; both names are random and hidden
//   ("<dir>/.<base>.<16 hex digits>.tmp"), so a symlink planted at a predictable name is never
//   followed or written through.
// - Files are created with mode 0600 (kOutputFileMode): they describe the memory of someone else's
//   training job (sizes, call sites, timings), so no one but the owner may read them; chmod widens.
//
// Errors: the functions that can fail return a Status (core/status.h) whose message names the path and
// the reason ("cannot create a temporary file next to '<path>': No such file or directory"), with the
// errno.
//
// Thread safety: an OutputFile is used by one thread at a time. The functions allocate (the temporary
// name), so they never run on the allocation path.
#pragma once

#include <sys/types.h>

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sentinel {

inline constexpr mode_t kOutputFileMode = 0600;

class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Removes the temporary file if commit() did not run: the target keeps its old contents.
  ~OutputFile();

  // Creates the temporary file next to `path`. A failure (naming the path, with the errno) if the
  // directory does not exist or is not writable.
  Status open(const std::string& path);
  // Appends bytes; false on a write error (the file stays uncommitted; commit() reports it).
  bool write(std::string_view bytes);
  // Flushes to disk and renames onto the target. A failure (temporary file removed) on any failure or
  // after an earlier write error.
  Status commit();
  // Removes the temporary file; the target is untouched.
  void abandon();

  bool is_open() const { return fd_ >= 0; }
  // True while the temporary has no name (O_TMPFILE); temp_path() is empty until commit names it.
  bool is_unnamed() const { return unnamed_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  Status create_named_temp();
  int name_unnamed();  // 0, or the errno of the failed link

  int fd_ = -1;
  bool unnamed_ = false;
  int write_errno_ = 0;
  std::string path_;
  std::string temp_path_;
};

// The stream buffer behind OutputFileStream: 64 KiB, written to the OutputFile when full or flushed.
class OutputFileBuffer : public std::streambuf {
 protected:
  OutputFileBuffer() { setp(data_, data_ + sizeof data_); }
  int overflow(int c) override;
  int sync() override;
  void discard() { setp(data_, data_ + sizeof data_); }
  OutputFile file_;

 private:
  char data_[1 << 16];
};

// A std::ostream over an OutputFile, for writers that stream (the timeline): nothing appears at the
// target until commit(). A failed open or write sets badbit.
class OutputFileStream : private OutputFileBuffer, public std::ostream {
 public:
  OutputFileStream() : std::ostream(static_cast<OutputFileBuffer*>(this)) {}
  Status open(const std::string& path);
  // Flushes, then OutputFile::commit.
  Status commit();
  // Removes the temporary file; the target is untouched.
  void abandon() {
    discard();
    file_.abandon();
  }
  bool is_open() const { return file_.is_open(); }
};

// The whole file in one call: open, write, commit.
Status write_file_replacing(const std::string& path, std::string_view contents);

// Opens `path` for appending (a log that outlives runs cannot be renamed into place): O_APPEND,
// O_NOFOLLOW (a symlink at `path` is refused with ELOOP), created 0600. Sets *fd to the descriptor
// (close-on-exec), or to -1 with a failure.
Status open_append_no_follow(const std::string& path, int* fd);

}  // namespace sentinel
