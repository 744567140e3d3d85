#include "os/directory.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "os/os.h"

namespace sentinel::os {
namespace {

// getdents64(2)'s record: d_reclen bytes, the NUL-terminated name at offsetof(d_name).
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// Closes the directory when the listing ends, also when a callback throws.
class OpenDirectory {
 public:
  explicit OpenDirectory(int fd) noexcept : fd_(fd) {}
  ~OpenDirectory() {
    const int e = errno;
    close(fd_);
    errno = e;
  }
  OpenDirectory(const OpenDirectory&) = delete;
  OpenDirectory& operator=(const OpenDirectory&) = delete;

 private:
  int fd_;
};

bool is_dot_entry(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

struct ThreadVisit {
  ThreadFn visit;
  void* ctx;
};

void visit_thread_entry(const char* name, void* ctx) {
  if (name[0] < '0' || name[0] > '9') return;
  long tid = 0;
  for (const char* p = name; *p >= '0' && *p <= '9'; ++p) tid = tid * 10 + (*p - '0');
  const auto* t = static_cast<const ThreadVisit*>(ctx);
  t->visit(static_cast<pid_t>(tid), t->ctx);
}

}  // namespace

int list_directory(const char* path, DirectoryEntryFn visit, void* ctx) {
  const int fd = open_read(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  OpenDirectory closer(fd);
  // A few dozen entries per call; sysfs and procfs directories Sentinel lists hold a few hundred at most.
  alignas(LinuxDirent64) char buf[2048];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) return 0;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
      off += d->d_reclen;
      if (!is_dot_entry(d->d_name)) visit(d->d_name, ctx);
    }
  }
}

int for_each_thread(ThreadFn visit, void* ctx) {
  ThreadVisit t{visit, ctx};
  return list_directory("/proc/self/task", visit_thread_entry, &t);
}

}  // namespace sentinel::os
