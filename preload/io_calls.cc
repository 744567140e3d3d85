#include "io_calls.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "profiler.h"
#include "runtime.h"

namespace sentinel::rt {
namespace {

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

// A libc function's name as a template argument, so that each wrapper gets its own real function.
template <size_t N>
struct FunctionName {
  char text[N];
  constexpr FunctionName(const char (&name)[N]) noexcept { std::copy_n(name, N, text); }
};

// The real function `name` (of type Fn), looked up once; nullptr if libc does not have it. The cache is
// constant-initialised (no guard variable, no constructor or destructor to order against other globals):
// threads that call at the same time may each look it up, and all store the same answer.
template <FunctionName name, typename Fn>
Fn real_function() noexcept {
  constexpr uintptr_t kNotLookedUp = 0, kAbsent = 1;
  static constinit std::atomic<uintptr_t> cached{kNotLookedUp};
  uintptr_t v = cached.load(std::memory_order_acquire);
  if (v == kNotLookedUp) {
    void* found = ::dlsym(RTLD_NEXT, name.text);
    v = found == nullptr ? kAbsent : reinterpret_cast<uintptr_t>(found);
    cached.store(v, std::memory_order_release);
  }
  return v == kAbsent ? nullptr : reinterpret_cast<Fn>(v);
}

// The shape every wrapper shares: a program's call first restores the windows in the buffers that
// `unprotect_buffers` names; Sentinel's own calls go straight to the real function. errno is the real
// call's (ENOSYS when libc does not have the function). `unprotect_buffers` is a lambda that captures
// the arguments by reference: inlined, nothing is allocated.
template <FunctionName name, typename Fn, typename UnprotectBuffers, typename... Args>
ssize_t forward(UnprotectBuffers unprotect_buffers, Args... args) noexcept {
  const Fn real_fn = real_function<name, Fn>();
  if (real_fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if (program_call()) unprotect_buffers();
  return real_fn(args...);
}

}  // namespace

ssize_t io_read(int fd, void* buf, size_t n) noexcept {
  return forward<"read", decltype(&::read)>([&] { unprotect(buf, n); }, fd, buf, n);
}

ssize_t io_write(int fd, const void* buf, size_t n) noexcept {
  return forward<"write", decltype(&::write)>([&] { unprotect(buf, n); }, fd, buf, n);
}

ssize_t io_pread(int fd, void* buf, size_t n, off_t off) noexcept {
  return forward<"pread", decltype(&::pread)>([&] { unprotect(buf, n); }, fd, buf, n, off);
}

ssize_t io_pwrite(int fd, const void* buf, size_t n, off_t off) noexcept {
  return forward<"pwrite", decltype(&::pwrite)>([&] { unprotect(buf, n); }, fd, buf, n, off);
}

ssize_t io_pread64(int fd, void* buf, size_t n, off64_t off) noexcept {
  return forward<"pread64", decltype(&::pread64)>([&] { unprotect(buf, n); }, fd, buf, n, off);
}

ssize_t io_pwrite64(int fd, const void* buf, size_t n, off64_t off) noexcept {
  return forward<"pwrite64", decltype(&::pwrite64)>([&] { unprotect(buf, n); }, fd, buf, n, off);
}

ssize_t io_readv(int fd, const struct iovec* iov, int count) noexcept {
  return forward<"readv", decltype(&::readv)>([&] { unprotect_iov(iov, count); }, fd, iov, count);
}

ssize_t io_writev(int fd, const struct iovec* iov, int count) noexcept {
  return forward<"writev", decltype(&::writev)>([&] { unprotect_iov(iov, count); }, fd, iov, count);
}

ssize_t io_recv(int fd, void* buf, size_t n, int flags) noexcept {
  return forward<"recv", decltype(&::recv)>([&] { unprotect(buf, n); }, fd, buf, n, flags);
}

ssize_t io_recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* from_len) noexcept {
  return forward<"recvfrom", decltype(&::recvfrom)>([&] { unprotect(buf, n); }, fd, buf, n, flags, from, from_len);
}

ssize_t io_recvmsg(int fd, struct msghdr* msg, int flags) noexcept {
  return forward<"recvmsg", decltype(&::recvmsg)>([&] { unprotect_msg(msg); }, fd, msg, flags);
}

ssize_t io_send(int fd, const void* buf, size_t n, int flags) noexcept {
  return forward<"send", decltype(&::send)>([&] { unprotect(buf, n); }, fd, buf, n, flags);
}

ssize_t io_sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* to, socklen_t to_len) noexcept {
  return forward<"sendto", decltype(&::sendto)>([&] { unprotect(buf, n); }, fd, buf, n, flags, to, to_len);
}

ssize_t io_sendmsg(int fd, const struct msghdr* msg, int flags) noexcept {
  return forward<"sendmsg", decltype(&::sendmsg)>([&] { unprotect_msg(msg); }, fd, msg, flags);
}

}  // namespace sentinel::rt
