// A fixed-capacity text builder on caller-provided storage, for messages that must be formatted inside
// the allocator or a signal handler: no allocation, no stdio. Text that does not fit is dropped (the
// result stays NUL-terminated) and truncated() says so, for callers that must refuse a cut-off path.
// Not thread-safe: one builder per thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sentinel {

class TextBuf {
 public:
  TextBuf(char* storage, size_t capacity) noexcept : buf_(storage), cap_(capacity) {
    if (cap_ > 0) buf_[0] = '\0';
  }
  // A builder that appends to the NUL-terminated text already in storage. Storage without a NUL in
  // its capacity is cut to capacity - 1 bytes (and counts as truncated).
  static TextBuf continuing(char* storage, size_t capacity) noexcept;
  TextBuf& put(const char* s) noexcept {
    while (s != nullptr && *s != '\0') put_char(*s++);
    return *this;
  }
  TextBuf& put(uint64_t v) noexcept {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) put_char(digits[--n]);
    return *this;
  }
  TextBuf& put_signed(int64_t v) noexcept {
    if (v < 0) {
      put_char('-');
      return put(static_cast<uint64_t>(-(v + 1)) + 1);
    }
    return put(static_cast<uint64_t>(v));
  }
  TextBuf& put_hex(uint64_t v) noexcept {
    put("0x");
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    while (n > 0) put_char(digits[--n]);
    return *this;
  }
  TextBuf& put_char(char c) noexcept {
    if (len_ + 1 < cap_) {
      buf_[len_++] = c;
      buf_[len_] = '\0';
    } else {
      truncated_ = true;
    }
    return *this;
  }
  const char* c_str() const noexcept { return buf_; }
  size_t size() const noexcept { return len_; }
  // True when some text was dropped since construction or the last clear().
  bool truncated() const noexcept { return truncated_; }
  void clear() noexcept {
    len_ = 0;
    truncated_ = false;
    if (cap_ > 0) buf_[0] = '\0';
  }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool truncated_ = false;
};

// Writes the whole string to fd with write(2), retrying on EINTR and short writes.
void write_all(int fd, const char* data, size_t len) noexcept;

}  // namespace sentinel
