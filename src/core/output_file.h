// Output files that cannot be turned against the user who runs Sentinel: every file Sentinel writes
// (stats, profiles, timelines, plans, traces) goes through OutputFile, the log through
// open_append_no_follow.
//
// - The data goes to a fresh temporary file in the target's directory, created with O_CREAT|O_EXCL and
//   O_NOFOLLOW under a random name (so a symlink planted at a predictable name is never followed or
//   written through), and is renamed onto the target only when complete (after fsync). A crash at
//   any moment leaves the old file or no file at the target, never a truncated one; rename replaces a
//   symlink planted at the target instead of writing through it.
// - Files are created with mode 0600 (kOutputFileMode): they describe the memory of someone else's
//   training job (sizes, call sites, timings), so no one but the owner may read them; chmod widens.
//
// Thread safety: an OutputFile is used by one thread at a time. The functions allocate (the temporary
// name), so they never run on the allocation path.
#pragma once

#include <sys/types.h>

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace sentinel {

inline constexpr mode_t kOutputFileMode = 0600;

class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Removes the temporary file if commit() did not run: the target keeps its old contents.
  ~OutputFile();

  // Creates the temporary file next to `path`. False (with *error naming the path and errno) if the
  // directory does not exist or is not writable.
  bool open(const std::string& path, std::string* error);
  // Appends bytes; false on a write error (the file stays uncommitted).
  bool write(std::string_view bytes);
  // Flushes to disk and renames onto the target. False (temporary file removed) on any failure or
  // after an earlier write error.
  bool commit(std::string* error);
  // Removes the temporary file; the target is untouched.
  void abandon();

  bool is_open() const { return fd_ >= 0; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  int fd_ = -1;
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
  bool open(const std::string& path, std::string* error);
  // Flushes, then OutputFile::commit.
  bool commit(std::string* error);
  // Removes the temporary file; the target is untouched.
  void abandon() {
    discard();
    file_.abandon();
  }
  bool is_open() const { return file_.is_open(); }
};

// The whole file in one call: open, write, commit.
bool write_file_replacing(const std::string& path, std::string_view contents, std::string* error);

// Opens `path` for appending (a log that outlives runs cannot be renamed into place): O_APPEND,
// O_NOFOLLOW (a symlink at `path` is refused with ELOOP), created 0600. Returns the descriptor
// (close-on-exec) or -1 with *error set.
int open_append_no_follow(const std::string& path, std::string* error);

}  // namespace sentinel
