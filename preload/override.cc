// The libc-facing names, and nothing else: each one maps to its implementation in runtime.cc.
// Keeping the names here makes it easy to see what Sentinel interposes.
//
// In a sanitizer build (SENTINEL_SANITIZER_SEAM, set by preload/CMakeLists.txt) this file and
// real_malloc.cc are compiled uninstrumented, and every call made before Sentinel's constructor goes
// straight to the next definition (the sanitizer's interceptor or libc): a sanitizer's start-up calls these
// names (AddressSanitizer's dlsym calls malloc, ThreadSanitizer's calls sigaltstack) before its shadow
// memory is mapped, when any instrumented code would fault. The constructor runs after the sanitizer's
// runtime is up (a library Sentinel depends on is initialised first), so from then on every call takes the
// instrumented path, as in a normal build.
#include <dlfcn.h>

#include <cstddef>

#include "io_calls.h"
#include "object_path.h"
#include "real_malloc.h"
#include "runtime.h"
#include "service.h"
#include "signals.h"

#define SENTINEL_EXPORT extern "C" __attribute__((visibility("default")))

#if SENTINEL_SANITIZER_SEAM
namespace {
bool g_constructed = false;  // written once by the constructor, before any thread of Sentinel's exists
}  // namespace
#define SENTINEL_EARLY(call) \
  if (__builtin_expect(!g_constructed, 0)) return sentinel::call
// The next definition of `name` (the sanitizer's interceptor, or libc's), looked up on every early call:
// these are few, and a function-local static would take a guard the sanitizer intercepts.
#define SENTINEL_EARLY_NEXT(name, ...)                                                \
  if (__builtin_expect(!g_constructed, 0))                                            \
  return reinterpret_cast<decltype(&::name)>(::dlsym(RTLD_NEXT, #name))(__VA_ARGS__)
#else
#define SENTINEL_EARLY(call)
#define SENTINEL_EARLY_NEXT(name, ...)
#endif

SENTINEL_EXPORT void* malloc(size_t size) noexcept {
  SENTINEL_EARLY(system_malloc(size));
  return sentinel::rt::malloc(size);
}
SENTINEL_EXPORT void free(void* p) noexcept {
  SENTINEL_EARLY(system_free(p));
  sentinel::rt::free(p);
}
SENTINEL_EXPORT void* calloc(size_t n, size_t size) noexcept {
  SENTINEL_EARLY(system_calloc(n, size));
  return sentinel::rt::calloc(n, size);
}
SENTINEL_EXPORT void* realloc(void* p, size_t size) noexcept {
  SENTINEL_EARLY(system_realloc(p, size));
  return sentinel::rt::realloc(p, size);
}
SENTINEL_EXPORT void* reallocarray(void* p, size_t n, size_t size) noexcept {
  SENTINEL_EARLY(system_realloc(p, __builtin_mul_overflow(n, size, &n) ? ~size_t{0} : n));
  return sentinel::rt::reallocarray(p, n, size);
}
SENTINEL_EXPORT int posix_memalign(void** out, size_t align, size_t size) noexcept {
  SENTINEL_EARLY(system_posix_memalign(out, align, size));
  return sentinel::rt::posix_memalign(out, align, size);
}
SENTINEL_EXPORT void* aligned_alloc(size_t align, size_t size) noexcept {
  SENTINEL_EARLY(system_aligned_alloc(align, size));
  return sentinel::rt::aligned_alloc(align, size);
}
SENTINEL_EXPORT void* memalign(size_t align, size_t size) noexcept {
  SENTINEL_EARLY(system_memalign(align, size));
  return sentinel::rt::memalign(align, size);
}
SENTINEL_EXPORT void* valloc(size_t size) noexcept {
  SENTINEL_EARLY(system_valloc(size));
  return sentinel::rt::valloc(size);
}
SENTINEL_EXPORT void* pvalloc(size_t size) noexcept {
  SENTINEL_EARLY(system_pvalloc(size));
  return sentinel::rt::pvalloc(size);
}
SENTINEL_EXPORT size_t malloc_usable_size(void* p) noexcept {
  SENTINEL_EARLY(system_malloc_usable_size(p));
  return sentinel::rt::malloc_usable_size(p);
}

SENTINEL_EXPORT int sigaction(int signum, const struct sigaction* act, struct sigaction* old) noexcept {
  SENTINEL_EARLY_NEXT(sigaction, signum, act, old);
  return sentinel::rt::sigaction(signum, act, old);
}
SENTINEL_EXPORT int sigaltstack(const stack_t* ss, stack_t* old) noexcept {
  SENTINEL_EARLY_NEXT(sigaltstack, ss, old);
  return sentinel::rt::sigaltstack(ss, old);
}
SENTINEL_EXPORT sighandler_t signal(int signum, sighandler_t handler) noexcept {
  SENTINEL_EARLY_NEXT(signal, signum, handler);
  return sentinel::rt::signal(signum, handler);
}

SENTINEL_EXPORT ssize_t read(int fd, void* buf, size_t n) {
  SENTINEL_EARLY_NEXT(read, fd, buf, n);
  return sentinel::rt::io_read(fd, buf, n);
}
SENTINEL_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  SENTINEL_EARLY_NEXT(write, fd, buf, n);
  return sentinel::rt::io_write(fd, buf, n);
}
SENTINEL_EXPORT ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  SENTINEL_EARLY_NEXT(pread, fd, buf, n, off);
  return sentinel::rt::io_pread(fd, buf, n, off);
}
SENTINEL_EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  SENTINEL_EARLY_NEXT(pwrite, fd, buf, n, off);
  return sentinel::rt::io_pwrite(fd, buf, n, off);
}
SENTINEL_EXPORT ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  SENTINEL_EARLY_NEXT(pread64, fd, buf, n, off);
  return sentinel::rt::io_pread64(fd, buf, n, off);
}
SENTINEL_EXPORT ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  SENTINEL_EARLY_NEXT(pwrite64, fd, buf, n, off);
  return sentinel::rt::io_pwrite64(fd, buf, n, off);
}
SENTINEL_EXPORT ssize_t readv(int fd, const struct iovec* iov, int count) {
  SENTINEL_EARLY_NEXT(readv, fd, iov, count);
  return sentinel::rt::io_readv(fd, iov, count);
}
SENTINEL_EXPORT ssize_t writev(int fd, const struct iovec* iov, int count) {
  SENTINEL_EARLY_NEXT(writev, fd, iov, count);
  return sentinel::rt::io_writev(fd, iov, count);
}
SENTINEL_EXPORT ssize_t recv(int fd, void* buf, size_t n, int flags) {
  SENTINEL_EARLY_NEXT(recv, fd, buf, n, flags);
  return sentinel::rt::io_recv(fd, buf, n, flags);
}
SENTINEL_EXPORT ssize_t recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* from_len) {
  SENTINEL_EARLY_NEXT(recvfrom, fd, buf, n, flags, from, from_len);
  return sentinel::rt::io_recvfrom(fd, buf, n, flags, from, from_len);
}
SENTINEL_EXPORT ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  SENTINEL_EARLY_NEXT(recvmsg, fd, msg, flags);
  return sentinel::rt::io_recvmsg(fd, msg, flags);
}
SENTINEL_EXPORT ssize_t send(int fd, const void* buf, size_t n, int flags) {
  SENTINEL_EARLY_NEXT(send, fd, buf, n, flags);
  return sentinel::rt::io_send(fd, buf, n, flags);
}
SENTINEL_EXPORT ssize_t sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* to, socklen_t to_len) {
  SENTINEL_EARLY_NEXT(sendto, fd, buf, n, flags, to, to_len);
  return sentinel::rt::io_sendto(fd, buf, n, flags, to, to_len);
}
SENTINEL_EXPORT ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  SENTINEL_EARLY_NEXT(sendmsg, fd, msg, flags);
  return sentinel::rt::io_sendmsg(fd, msg, flags);
}

// The program's first thread starts Sentinel's service thread (preload/service.h), so that a
// single-threaded program stays single-threaded.
SENTINEL_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                                   void* arg) noexcept {
  SENTINEL_EARLY_NEXT(pthread_create, thread, attr, start, arg);
  return sentinel::rt::program_thread_create(thread, attr, start, arg);
}

// Runs before main (after libc is ready); allocations made earlier simply go to the system allocator.
__attribute__((constructor)) static void sentinel_constructor() {
#if SENTINEL_SANITIZER_SEAM
  g_constructed = true;
#endif
  sentinel::rt::initialise();
}
