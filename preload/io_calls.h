// System calls that copy to or from a program buffer: read, write, pread, pwrite (and their 64 names),
// readv, writev, recv, recvfrom, recvmsg, send, sendto, sendmsg.
//
// Why: while the software sampler profiles, one page window per live object is mprotect(PROT_NONE).
// When the kernel copies into or out of such a page on a system call's behalf it does not fault: the
// call fails with EFAULT ("Bad address"), and a datagram received that way is lost. So before the call,
// every window in the buffers it will touch (each iovec; for recvmsg/sendmsg also msg_control) is
// restored and counted as a touch (the I/O accesses the object), and an I/O guard over the call's span
// keeps the sampler from arming a window there until the call returns (SoftwareSampler::begin_io/end_io);
// never by retrying after EFAULT.
//
// Fast path: while no window is protected (no sampling, or nothing armed) the wrapper is one lock-free
// check and the real call. Calls made by Sentinel itself (its service thread, or any thread inside
// Sentinel) go straight to the real function. errno is the real call's. Nothing here allocates; the real
// functions are found once with dlsym(RTLD_NEXT).
//
// Limits: more than 256 calls in flight at once leave the later ones unguarded (a window armed during such
// a call can make it fail with EFAULT; counted as io_unguarded); a blocking call keeps the windows of its
// span unarmed while it waits; the _FORTIFY_SOURCE entry points (__read_chk, ...), preadv/pwritev and
// recvmmsg/sendmmsg are not interposed.
//
// Thread safety: any thread, and async-signal-safe: the guard takes no lock (it claims an entry with a
// compare-exchange and waits, boundedly, only for another thread's one mprotect call).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace sentinel::rt {

ssize_t io_read(int fd, void* buf, size_t n) noexcept;
ssize_t io_write(int fd, const void* buf, size_t n) noexcept;
ssize_t io_pread(int fd, void* buf, size_t n, off_t off) noexcept;
ssize_t io_pwrite(int fd, const void* buf, size_t n, off_t off) noexcept;
ssize_t io_pread64(int fd, void* buf, size_t n, off64_t off) noexcept;
ssize_t io_pwrite64(int fd, const void* buf, size_t n, off64_t off) noexcept;
ssize_t io_readv(int fd, const struct iovec* iov, int count) noexcept;
ssize_t io_writev(int fd, const struct iovec* iov, int count) noexcept;
ssize_t io_recv(int fd, void* buf, size_t n, int flags) noexcept;
ssize_t io_recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* from_len) noexcept;
ssize_t io_recvmsg(int fd, struct msghdr* msg, int flags) noexcept;
ssize_t io_send(int fd, const void* buf, size_t n, int flags) noexcept;
ssize_t io_sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* to, socklen_t to_len) noexcept;
ssize_t io_sendmsg(int fd, const struct msghdr* msg, int flags) noexcept;

}  // namespace sentinel::rt
