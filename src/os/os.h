// The boundary between Sentinel and the kernel: every system call Sentinel makes about memory
// (mmap, munmap, madvise, mprotect, mincore, mbind, get_mempolicy, move_pages, mremap), perf_event_open, and
// the opens and reads of /sys and /proc files go through the table of function pointers here, so that
// tests can replace the kernel (fault injection: os/fault_injector.h) without touching the callers.
//
// Contract of every entry: the kernel's own. Same arguments, same results, failure is -1 (MAP_FAILED
// for mmap) with errno set; move_pages fills status[] per page exactly as move_pages(2) does. A
// replacement table must keep that contract, and a call that it fails must have had no effect (a
// move_pages that fails pages individually must leave those pages where they were).
//
// Cost: one relaxed load of the active table and one indirect call per system call; no allocation, no
// lock, no virtual dispatch. The wrappers are safe inside malloc/free and in signal handlers (as safe
// as the system call they wrap).
//
// Thread safety: install() swaps the active table atomically; a call that already loaded the old table
// may still run through it, so a replaced table must stay valid (static storage) for as long as any
// thread may be inside a call: in practice, tests install a table at the start and restore the previous
// one at the end. Nothing here allocates or takes a lock.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>

struct perf_event_attr;  // <linux/perf_event.h>; not included here (it collides with libpfm4's copy)

namespace sentinel::os {

struct Calls {
  void* (*mmap)(void* addr, size_t len, int prot, int flags, int fd, off_t off);
  int (*munmap)(void* addr, size_t len);
  int (*madvise)(void* addr, size_t len, int advice);
  int (*mprotect)(void* addr, size_t len, int prot);
  int (*mincore)(void* addr, size_t len, unsigned char* vec);
  long (*mbind)(void* addr, unsigned long len, int mode, const unsigned long* nodemask, unsigned long maxnode,
                unsigned flags);
  long (*get_mempolicy)(int* mode, unsigned long* nodemask, unsigned long maxnode, const void* addr,
                        unsigned long flags);
  long (*move_pages)(int pid, unsigned long count, void** pages, const int* nodes, int* status, int flags);
  int (*perf_event_open)(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags);
  // Files under /sys and /proc (read-only: flags are O_RDONLY | O_CLOEXEC and friends).
  int (*open_read)(const char* path, int flags);
  ssize_t (*read)(int fd, void* buf, size_t len);
  int (*close)(int fd);
  // mremap(2) with its fifth argument (used with MREMAP_FIXED; ignored otherwise).
  void* (*mremap)(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr);
};

// The kernel itself.
const Calls& kernel() noexcept;

namespace detail {
extern std::atomic<const Calls*> g_active;
}  // namespace detail

// The table in use now.
inline const Calls& active() noexcept { return *detail::g_active.load(std::memory_order_acquire); }

// Makes `calls` the active table and returns the previous one. `calls` must outlive its use (see above).
const Calls* install(const Calls* calls) noexcept;

inline void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) noexcept {
  return active().mmap(addr, len, prot, flags, fd, off);
}
inline int munmap(void* addr, size_t len) noexcept { return active().munmap(addr, len); }
inline int madvise(void* addr, size_t len, int advice) noexcept { return active().madvise(addr, len, advice); }
inline int mprotect(void* addr, size_t len, int prot) noexcept { return active().mprotect(addr, len, prot); }
inline int mincore(void* addr, size_t len, unsigned char* vec) noexcept { return active().mincore(addr, len, vec); }
inline long mbind(void* addr, unsigned long len, int mode, const unsigned long* nodemask, unsigned long maxnode,
                  unsigned flags) noexcept {
  return active().mbind(addr, len, mode, nodemask, maxnode, flags);
}
inline long get_mempolicy(int* mode, unsigned long* nodemask, unsigned long maxnode, const void* addr,
                          unsigned long flags) noexcept {
  return active().get_mempolicy(mode, nodemask, maxnode, addr, flags);
}
inline long move_pages(int pid, unsigned long count, void** pages, const int* nodes, int* status,
                       int flags) noexcept {
  return active().move_pages(pid, count, pages, nodes, status, flags);
}
inline int perf_event_open(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags) noexcept {
  return active().perf_event_open(attr, tid, cpu, group_fd, flags);
}
inline int open_read(const char* path, int flags) noexcept { return active().open_read(path, flags); }
inline ssize_t read(int fd, void* buf, size_t len) noexcept { return active().read(fd, buf, len); }
inline int close(int fd) noexcept { return active().close(fd); }
inline void* mremap(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr) noexcept {
  return active().mremap(old_addr, old_len, new_len, flags, new_addr);
}

// Reads up to cap - 1 bytes of a small file (sysfs, procfs) into buf and NUL-terminates it. Returns the
// byte count, or -1 with errno set (open or read failed). No allocation: safe anywhere open(2) is.
ssize_t read_small_file(const char* path, char* buf, size_t cap) noexcept;

}  // namespace sentinel::os
