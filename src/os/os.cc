#include "os/os.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sentinel::os {
namespace {

// Raw system calls, not libnuma's wrappers: libnuma's constructor allocates, and these run inside malloc.
void* k_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return ::mmap(addr, len, prot, flags, fd, off);
}
int k_munmap(void* addr, size_t len) { return ::munmap(addr, len); }
int k_madvise(void* addr, size_t len, int advice) { return ::madvise(addr, len, advice); }
int k_mprotect(void* addr, size_t len, int prot) { return ::mprotect(addr, len, prot); }
int k_mincore(void* addr, size_t len, unsigned char* vec) { return ::mincore(addr, len, vec); }
long k_mbind(void* addr, unsigned long len, int mode, const unsigned long* nodemask, unsigned long maxnode,
             unsigned flags) {
  return ::syscall(SYS_mbind, addr, len, mode, nodemask, maxnode, flags);
}
long k_get_mempolicy(int* mode, unsigned long* nodemask, unsigned long maxnode, const void* addr,
                     unsigned long flags) {
  return ::syscall(SYS_get_mempolicy, mode, nodemask, maxnode, addr, flags);
}
long k_move_pages(int pid, unsigned long count, void** pages, const int* nodes, int* status, int flags) {
  return ::syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);
}
int k_perf_event_open(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags) {
  return static_cast<int>(::syscall(SYS_perf_event_open, attr, tid, cpu, group_fd, flags));
}
int k_open_read(const char* path, int flags) { return ::open(path, flags); }
ssize_t k_read(int fd, void* buf, size_t len) { return ::read(fd, buf, len); }
int k_close(int fd) { return ::close(fd); }
void* k_mremap(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr) {
  return ::mremap(old_addr, old_len, new_len, flags, new_addr);
}

constexpr Calls kKernel = {k_mmap,        k_munmap,     k_madvise,         k_mprotect,
                           k_mincore,     k_mbind,      k_get_mempolicy,   k_move_pages,
                           k_perf_event_open, k_open_read, k_read,         k_close,
                           k_mremap};

}  // namespace

namespace detail {
constinit std::atomic<const Calls*> g_active{&kKernel};
}  // namespace detail

const Calls& kernel() noexcept { return kKernel; }

const Calls* install(const Calls* calls) noexcept {
  return detail::g_active.exchange(calls != nullptr ? calls : &kKernel, std::memory_order_acq_rel);
}

ssize_t read_small_file(const char* path, char* buf, size_t cap) noexcept {
  if (cap == 0) {
    errno = EINVAL;
    return -1;
  }
  const int fd = open_read(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t n = 0;
  while (n + 1 < cap) {
    const ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    if (r == 0) break;
    n += static_cast<size_t>(r);
  }
  close(fd);
  buf[n] = '\0';
  return static_cast<ssize_t>(n);
}

}  // namespace sentinel::os
