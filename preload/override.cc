// The libc-facing names, and nothing else: each one maps to its implementation in runtime.cc.
// Keeping the names here makes it easy to see what Sentinel interposes.
#include <cstddef>

#include "io_calls.h"
#include "runtime.h"
#include "signals.h"

#define SENTINEL_EXPORT extern "C" __attribute__((visibility("default")))

SENTINEL_EXPORT void* malloc(size_t size) noexcept { return sentinel::rt::malloc(size); }
SENTINEL_EXPORT void free(void* p) noexcept { sentinel::rt::free(p); }
SENTINEL_EXPORT void* calloc(size_t n, size_t size) noexcept { return sentinel::rt::calloc(n, size); }
SENTINEL_EXPORT void* realloc(void* p, size_t size) noexcept { return sentinel::rt::realloc(p, size); }
SENTINEL_EXPORT void* reallocarray(void* p, size_t n, size_t size) noexcept {
  return sentinel::rt::reallocarray(p, n, size);
}
SENTINEL_EXPORT int posix_memalign(void** out, size_t align, size_t size) noexcept {
  return sentinel::rt::posix_memalign(out, align, size);
}
SENTINEL_EXPORT void* aligned_alloc(size_t align, size_t size) noexcept {
  return sentinel::rt::aligned_alloc(align, size);
}
SENTINEL_EXPORT void* memalign(size_t align, size_t size) noexcept {
  return sentinel::rt::memalign(align, size);
}
SENTINEL_EXPORT void* valloc(size_t size) noexcept { return sentinel::rt::valloc(size); }
SENTINEL_EXPORT void* pvalloc(size_t size) noexcept { return sentinel::rt::pvalloc(size); }
SENTINEL_EXPORT size_t malloc_usable_size(void* p) noexcept { return sentinel::rt::malloc_usable_size(p); }

SENTINEL_EXPORT int sigaction(int signum, const struct sigaction* act, struct sigaction* old) noexcept {
  return sentinel::rt::sigaction(signum, act, old);
}
SENTINEL_EXPORT int sigaltstack(const stack_t* ss, stack_t* old) noexcept {
  return sentinel::rt::sigaltstack(ss, old);
}
SENTINEL_EXPORT sighandler_t signal(int signum, sighandler_t handler) noexcept {
  return sentinel::rt::signal(signum, handler);
}

SENTINEL_EXPORT ssize_t read(int fd, void* buf, size_t n) { return sentinel::rt::io_read(fd, buf, n); }
SENTINEL_EXPORT ssize_t write(int fd, const void* buf, size_t n) { return sentinel::rt::io_write(fd, buf, n); }
SENTINEL_EXPORT ssize_t pread(int fd, void* buf, size_t n, off_t off) { return sentinel::rt::io_pread(fd, buf, n, off); }
SENTINEL_EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  return sentinel::rt::io_pwrite(fd, buf, n, off);
}
SENTINEL_EXPORT ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  return sentinel::rt::io_pread64(fd, buf, n, off);
}
SENTINEL_EXPORT ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  return sentinel::rt::io_pwrite64(fd, buf, n, off);
}
SENTINEL_EXPORT ssize_t readv(int fd, const struct iovec* iov, int count) { return sentinel::rt::io_readv(fd, iov, count); }
SENTINEL_EXPORT ssize_t writev(int fd, const struct iovec* iov, int count) { return sentinel::rt::io_writev(fd, iov, count); }
SENTINEL_EXPORT ssize_t recv(int fd, void* buf, size_t n, int flags) { return sentinel::rt::io_recv(fd, buf, n, flags); }
SENTINEL_EXPORT ssize_t recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* from_len) {
  return sentinel::rt::io_recvfrom(fd, buf, n, flags, from, from_len);
}
SENTINEL_EXPORT ssize_t recvmsg(int fd, struct msghdr* msg, int flags) { return sentinel::rt::io_recvmsg(fd, msg, flags); }
SENTINEL_EXPORT ssize_t send(int fd, const void* buf, size_t n, int flags) { return sentinel::rt::io_send(fd, buf, n, flags); }
SENTINEL_EXPORT ssize_t sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* to, socklen_t to_len) {
  return sentinel::rt::io_sendto(fd, buf, n, flags, to, to_len);
}
SENTINEL_EXPORT ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  return sentinel::rt::io_sendmsg(fd, msg, flags);
}

// Runs before main (after libc is ready); allocations made earlier simply go to the system allocator.
__attribute__((constructor)) static void sentinel_constructor() { sentinel::rt::initialise(); }
