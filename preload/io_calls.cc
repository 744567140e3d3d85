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

// Whether the buffers are guarded around the call: Sentinel's own calls never touch objects.
inline bool program_call() noexcept { return !thread_inside_sentinel(); }

// The span of user memory a call copies to or from: one guarded range (profiler.h), the union of its
// buffers (a readv's iovecs, a recvmsg's data and control buffers).
struct IoSpan {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  IoSpan() = default;
  IoSpan(const void* p, size_t n) noexcept { add(p, n); }
  void add(const void* p, size_t n) noexcept {
    if (p == nullptr || n == 0) return;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    lo = a < lo ? a : lo;
    const uintptr_t e = n > UINTPTR_MAX - a ? UINTPTR_MAX : a + n;
    hi = e > hi ? e : hi;
  }
  void add_iov(const struct iovec* iov, int count) noexcept {
    if (iov == nullptr) return;
    for (int i = 0; i < count; ++i) add(iov[i].iov_base, iov[i].iov_len);
  }
};

IoSpan iov_span(const struct iovec* iov, int count) noexcept {
  IoSpan s;
  s.add_iov(iov, count);
  return s;
}

IoSpan msg_span(const struct msghdr* msg) noexcept {
  IoSpan s;
  if (msg == nullptr) return s;
  s.add_iov(msg->msg_iov, static_cast<int>(msg->msg_iovlen));
  s.add(msg->msg_control, msg->msg_controllen);
  return s;
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

// The shape every wrapper shares: a program's call is guarded over the span of its buffers (the sampled
// windows there restored and none armed until the call returns); Sentinel's own calls go straight to the
// real function. errno is the real call's (ENOSYS when libc does not have the function).
template <FunctionName name, typename Fn, typename... Args>
ssize_t forward(IoSpan span, Args... args) noexcept {
  const Fn real_fn = real_function<name, Fn>();
  if (real_fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if (!program_call() || span.hi <= span.lo) return real_fn(args...);
  const uintptr_t guard = profiler_begin_io(reinterpret_cast<const void*>(span.lo), span.hi - span.lo);
  const ssize_t result = real_fn(args...);
  const int saved = errno;
  profiler_end_io(guard);
  errno = saved;
  return result;
}

}  // namespace

ssize_t io_read(int fd, void* buf, size_t n) noexcept {
  return forward<"read", decltype(&::read)>(IoSpan(buf, n), fd, buf, n);
}

ssize_t io_write(int fd, const void* buf, size_t n) noexcept {
  return forward<"write", decltype(&::write)>(IoSpan(buf, n), fd, buf, n);
}

ssize_t io_pread(int fd, void* buf, size_t n, off_t off) noexcept {
  return forward<"pread", decltype(&::pread)>(IoSpan(buf, n), fd, buf, n, off);
}

ssize_t io_pwrite(int fd, const void* buf, size_t n, off_t off) noexcept {
  return forward<"pwrite", decltype(&::pwrite)>(IoSpan(buf, n), fd, buf, n, off);
}

ssize_t io_pread64(int fd, void* buf, size_t n, off64_t off) noexcept {
  return forward<"pread64", decltype(&::pread64)>(IoSpan(buf, n), fd, buf, n, off);
}

ssize_t io_pwrite64(int fd, const void* buf, size_t n, off64_t off) noexcept {
  return forward<"pwrite64", decltype(&::pwrite64)>(IoSpan(buf, n), fd, buf, n, off);
}

ssize_t io_readv(int fd, const struct iovec* iov, int count) noexcept {
  return forward<"readv", decltype(&::readv)>(iov_span(iov, count), fd, iov, count);
}

ssize_t io_writev(int fd, const struct iovec* iov, int count) noexcept {
  return forward<"writev", decltype(&::writev)>(iov_span(iov, count), fd, iov, count);
}

ssize_t io_recv(int fd, void* buf, size_t n, int flags) noexcept {
  return forward<"recv", decltype(&::recv)>(IoSpan(buf, n), fd, buf, n, flags);
}

ssize_t io_recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* from_len) noexcept {
  return forward<"recvfrom", decltype(&::recvfrom)>(IoSpan(buf, n), fd, buf, n, flags, from, from_len);
}

ssize_t io_recvmsg(int fd, struct msghdr* msg, int flags) noexcept {
  return forward<"recvmsg", decltype(&::recvmsg)>(msg_span(msg), fd, msg, flags);
}

ssize_t io_send(int fd, const void* buf, size_t n, int flags) noexcept {
  return forward<"send", decltype(&::send)>(IoSpan(buf, n), fd, buf, n, flags);
}

ssize_t io_sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* to, socklen_t to_len) noexcept {
  return forward<"sendto", decltype(&::sendto)>(IoSpan(buf, n), fd, buf, n, flags, to, to_len);
}

ssize_t io_sendmsg(int fd, const struct msghdr* msg, int flags) noexcept {
  return forward<"sendmsg", decltype(&::sendmsg)>(msg_span(msg), fd, msg, flags);
}

}  // namespace sentinel::rt
