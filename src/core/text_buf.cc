#include "core/text_buf.h"

#include <cerrno>
#include <unistd.h>

namespace sentinel {

TextBuf TextBuf::continuing(char* storage, size_t capacity) noexcept {
  TextBuf t(storage, 0);  // capacity 0: the constructor leaves the storage alone
  t.cap_ = capacity;
  while (t.len_ < capacity && storage[t.len_] != '\0') ++t.len_;
  if (capacity > 0 && t.len_ == capacity) {
    t.len_ = capacity - 1;
    storage[t.len_] = '\0';
    t.truncated_ = true;
  }
  return t;
}

void write_all(int fd, const char* data, size_t len) noexcept {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
}

}  // namespace sentinel
