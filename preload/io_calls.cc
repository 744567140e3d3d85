#include "io_calls.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>

#include "profiler.h"
#include "runtime.h"

namespace sentinel::rt {
namespace {

template <typename Fn>
Fn resolve(const char* name) noexcept {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

// The real function, looked up once (the first lookup may run in any thread: a static's initialisation is
// thread-safe). Sets ENOSYS and returns -1 if libc does not have it.
#define SENTINEL_REAL(name)                                      \
  static const auto real_fn = resolve<decltype(&::name)>(#name); \
  if (real_fn == nullptr) {                                       \
    errno = ENOSYS;                                               \
    return -1;                                                    \
  }

// Whether buffers must be unprotected before the call: Sentinel's own calls never touch objects.
inline bool program_call() noexcept { return !thread_inside_sentinel(); }

// Unprotects without disturbing errno (the caller's errno must be exactly what the real call leaves).
void unprotect(const void* addr, size_t len) noexcept {
  const int saved = errno;
  profiler_unprotect_io(addr, len);
  errno = saved;
}

void unprotect_iov(const struct iovec* iov, int count) noexcept {
  if (iov == nullptr) return;
  for (int i = 0; i < count; ++i) unprotect(iov[i].iov_base, iov[i].iov_len);
}

void unprotect_msg(const struct msghdr* msg) noexcept {
  if (msg == nullptr) return;
  unprotect_iov(msg->msg_iov, static_cast<int>(msg->msg_iovlen));
  unprotect(msg->msg_control, msg->msg_controllen);
}

}  // namespace

ssize_t io_read(int fd, void* buf, size_t n) noexcept {
  SENTINEL_REAL(read);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n);
}

ssize_t io_write(int fd, const void* buf, size_t n) noexcept {
  SENTINEL_REAL(write);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n);
}

ssize_t io_pread(int fd, void* buf, size_t n, off_t off) noexcept {
  SENTINEL_REAL(pread);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, off);
}

ssize_t io_pwrite(int fd, const void* buf, size_t n, off_t off) noexcept {
  SENTINEL_REAL(pwrite);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, off);
}

ssize_t io_pread64(int fd, void* buf, size_t n, off64_t off) noexcept {
  SENTINEL_REAL(pread64);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, off);
}

ssize_t io_pwrite64(int fd, const void* buf, size_t n, off64_t off) noexcept {
  SENTINEL_REAL(pwrite64);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, off);
}

ssize_t io_readv(int fd, const struct iovec* iov, int count) noexcept {
  SENTINEL_REAL(readv);
  if (program_call()) unprotect_iov(iov, count);
  return real_fn(fd, iov, count);
}

ssize_t io_writev(int fd, const struct iovec* iov, int count) noexcept {
  SENTINEL_REAL(writev);
  if (program_call()) unprotect_iov(iov, count);
  return real_fn(fd, iov, count);
}

ssize_t io_recv(int fd, void* buf, size_t n, int flags) noexcept {
  SENTINEL_REAL(recv);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, flags);
}

ssize_t io_recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* from_len) noexcept {
  SENTINEL_REAL(recvfrom);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, flags, from, from_len);
}

ssize_t io_recvmsg(int fd, struct msghdr* msg, int flags) noexcept {
  SENTINEL_REAL(recvmsg);
  if (program_call()) unprotect_msg(msg);
  return real_fn(fd, msg, flags);
}

ssize_t io_send(int fd, const void* buf, size_t n, int flags) noexcept {
  SENTINEL_REAL(send);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, flags);
}

ssize_t io_sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* to, socklen_t to_len) noexcept {
  SENTINEL_REAL(sendto);
  if (program_call()) unprotect(buf, n);
  return real_fn(fd, buf, n, flags, to, to_len);
}

ssize_t io_sendmsg(int fd, const struct msghdr* msg, int flags) noexcept {
  SENTINEL_REAL(sendmsg);
  if (program_call()) unprotect_msg(msg);
  return real_fn(fd, msg, flags);
}

#undef SENTINEL_REAL

}  // namespace sentinel::rt
