#include "core/text_buf.h"

#include <cerrno>
#include <unistd.h>

namespace sentinel {

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
