// Status: the one way Sentinel's functions say that they did what was asked, or why not. A Status is ok, or
// a failure with a one-line message for the log (what failed, in the caller's words) and, where the
// kernel said why, its errno. (The idea is LevelDB's Status: one small value type instead of a bool next
// to an out-parameter of each caller's choosing.)
//
// Unlike LevelDB's, it never allocates, so the allocator path and the library constructor can return one:
// the message is either static text (Status::error("...")) or, once appended to, a copy in the Status's
// own fixed buffer (kCapacity bytes; text past it is cut, and truncated() says so). Copies are plain
// copies. Functions that return one are marked [[nodiscard]] by the type.
//
// kCapacity is 1 KiB: the longest messages Sentinel builds fit whole (a configuration error quotes the
// value, escaped, and every accepted value: under 400 bytes; an output file's rename failure names the
// temporary and the target path: whole while the path is under about 480 bytes). A Status is returned at
// start-up, on the service thread and by the command-line tool, never per allocation.
//
// New code returns Status; no adapter to the older convention (a bool next to an out-parameter) is left.
//
// Thread safety: a value type; no shared state.
#pragma once

#include <cstddef>

namespace sentinel {

class [[nodiscard]] Status {
 public:
  static constexpr size_t kCapacity = 1024;

  constexpr Status() noexcept = default;  // ok
  static constexpr Status ok() noexcept { return Status(); }
  // A failure described by `static_text` (text that outlives every Status: a literal), with the errno the
  // kernel gave (0: none).
  static constexpr Status error(const char* static_text, int sys_errno = 0) noexcept {
    Status s;
    s.failed_ = true;
    s.static_text_ = static_text != nullptr ? static_text : "";
    s.errno_ = sys_errno;
    return s;
  }

  // Appends to a failure's message (the first append copies the static text into the buffer). No effect on
  // an ok Status.
  Status& append(const char* text) noexcept;
  Status& append(unsigned long long value) noexcept;

  bool is_ok() const noexcept { return !failed_; }
  // The message: "" for ok.
  const char* message() const noexcept { return text_[0] != '\0' ? text_ : static_text_; }
  // The static text the failure was made with (without what was appended): "" for ok. It outlives the
  // Status, so it can be handed out as a plain const char*.
  const char* static_text() const noexcept { return static_text_; }
  int sys_errno() const noexcept { return errno_; }
  bool truncated() const noexcept { return truncated_; }

 private:
  bool failed_ = false;
  bool truncated_ = false;
  int errno_ = 0;
  const char* static_text_ = "";
  char text_[kCapacity] = {};  // the message once appended to; empty before
};

}  // namespace sentinel
