#include "os/fault_injector.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>

namespace sentinel::os {
namespace {

struct State {
  std::atomic<bool> running{false};
  const Calls* next = nullptr;  // the table the injector forwards to
  uint64_t seed = 0;
  uint64_t threshold = 0;  // a draw below this fails the call (rate scaled to 2^32)
  uint64_t partial_threshold = 0;
  uint32_t ops = 0;
  std::atomic<uint64_t> draws{0};
  std::atomic<uint64_t> calls[kNumOps] = {};
  std::atomic<uint64_t> failed[kNumOps] = {};
  std::atomic<uint64_t> partial{0}, pages_failed{0};
};
constinit State g;

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// 32 random bits; the sequence depends only on the seed and the order of calls.
uint64_t draw() { return mix(g.seed ^ mix(g.draws.fetch_add(1, std::memory_order_relaxed))) >> 32; }

// Counts the call; true when it is to fail.
bool should_fail(Op op) {
  const int i = static_cast<int>(op);
  g.calls[i].fetch_add(1, std::memory_order_relaxed);
  if ((g.ops & op_bit(op)) == 0 || draw() >= g.threshold) return false;
  return true;
}

template <size_t N>
int pick(const int (&errors)[N]) {
  return errors[draw() % N];
}

void* fail_ptr(Op op, int err) {
  g.failed[static_cast<int>(op)].fetch_add(1, std::memory_order_relaxed);
  errno = err;
  return MAP_FAILED;
}
template <typename R = int>
R fail(Op op, int err) {
  g.failed[static_cast<int>(op)].fetch_add(1, std::memory_order_relaxed);
  errno = err;
  return static_cast<R>(-1);
}

void* f_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (should_fail(Op::kMmap)) return fail_ptr(Op::kMmap, pick({ENOMEM, EAGAIN}));
  return g.next->mmap(addr, len, prot, flags, fd, off);
}
int f_munmap(void* addr, size_t len) {
  g.calls[static_cast<int>(Op::kMunmap)].fetch_add(1, std::memory_order_relaxed);
  return g.next->munmap(addr, len);
}
int f_madvise(void* addr, size_t len, int advice) {
  if (should_fail(Op::kMadvise)) return fail(Op::kMadvise, pick({EAGAIN, ENOMEM, EINVAL}));
  return g.next->madvise(addr, len, advice);
}
int f_mprotect(void* addr, size_t len, int prot) {
  if (should_fail(Op::kMprotect) && prot == PROT_NONE) return fail(Op::kMprotect, ENOMEM);
  return g.next->mprotect(addr, len, prot);
}
int f_mincore(void* addr, size_t len, unsigned char* vec) {
  if (should_fail(Op::kMincore)) return fail(Op::kMincore, pick({ENOMEM, EAGAIN}));
  return g.next->mincore(addr, len, vec);
}
long f_mbind(void* addr, unsigned long len, int mode, const unsigned long* mask, unsigned long maxnode,
             unsigned flags) {
  if (should_fail(Op::kMbind)) return fail<long>(Op::kMbind, pick({ENOMEM, EIO, EFAULT, EPERM}));
  return g.next->mbind(addr, len, mode, mask, maxnode, flags);
}
long f_get_mempolicy(int* mode, unsigned long* mask, unsigned long maxnode, const void* addr, unsigned long flags) {
  if (should_fail(Op::kGetMempolicy)) return fail<long>(Op::kGetMempolicy, pick({EFAULT, EINVAL}));
  return g.next->get_mempolicy(mode, mask, maxnode, addr, flags);
}

// A move that fails some pages: those pages are left out of the real call (so they stay where they
// are) and get a per-page error; the rest go to the kernel in blocks that fit on the stack.
long partial_move(int pid, unsigned long count, void** pages, const int* nodes, int* status, int flags) {
  constexpr unsigned long kBlock = 256;
  void* sub_pages[kBlock];
  int sub_nodes[kBlock];
  int sub_status[kBlock];
  unsigned long where[kBlock];
  uint64_t failed_pages = 0;
  long result = 0;
  for (unsigned long base = 0; base < count; base += kBlock) {
    const unsigned long n = count - base < kBlock ? count - base : kBlock;
    unsigned long m = 0;
    for (unsigned long k = 0; k < n; ++k) {
      if (draw() < g.partial_threshold) {
        status[base + k] = -pick({EBUSY, ENOMEM, EACCES});
        ++failed_pages;
        continue;
      }
      sub_pages[m] = pages[base + k];
      sub_nodes[m] = nodes[base + k];
      where[m++] = base + k;
    }
    if (m == 0) continue;
    const long r = g.next->move_pages(pid, m, sub_pages, sub_nodes, sub_status, flags);
    if (r < 0) return r;  // errno from the kernel; status[] partly unset, as after a real failure
    if (r > 0) result += r;
    for (unsigned long j = 0; j < m; ++j) status[where[j]] = sub_status[j];
  }
  g.partial.fetch_add(1, std::memory_order_relaxed);
  g.pages_failed.fetch_add(failed_pages, std::memory_order_relaxed);
  return result;
}

long f_move_pages(int pid, unsigned long count, void** pages, const int* nodes, int* status, int flags) {
  if (!should_fail(Op::kMovePages)) return g.next->move_pages(pid, count, pages, nodes, status, flags);
  if (nodes != nullptr && count > 0 && draw() < (1ull << 31)) {
    return partial_move(pid, count, pages, nodes, status, flags);
  }
  return fail<long>(Op::kMovePages, pick({ENOMEM, EPERM, EFAULT, EACCES}));
}
int f_perf_event_open(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags) {
  if (should_fail(Op::kPerfEventOpen)) return fail(Op::kPerfEventOpen, pick({EACCES, ENOENT, EMFILE, ENODEV}));
  return g.next->perf_event_open(attr, tid, cpu, group_fd, flags);
}
int f_open_read(const char* path, int flags) {
  if (should_fail(Op::kOpenRead)) return fail(Op::kOpenRead, pick({EACCES, ENOENT, EMFILE}));
  return g.next->open_read(path, flags);
}
ssize_t f_read(int fd, void* buf, size_t len) {
  if (should_fail(Op::kRead)) return fail<ssize_t>(Op::kRead, EIO);
  return g.next->read(fd, buf, len);
}
int f_close(int fd) {
  g.calls[static_cast<int>(Op::kClose)].fetch_add(1, std::memory_order_relaxed);
  return g.next->close(fd);
}

void* f_mremap(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr) {
  if (should_fail(Op::kMremap)) return fail_ptr(Op::kMremap, pick({ENOMEM, EAGAIN, EINVAL}));
  return g.next->mremap(old_addr, old_len, new_len, flags, new_addr);
}

constexpr Calls kInjecting = {f_mmap,    f_munmap, f_madvise,         f_mprotect,  f_mincore, f_mbind,
                              f_get_mempolicy, f_move_pages, f_perf_event_open, f_open_read, f_read, f_close,
                              f_mremap};

constexpr const char* kOpNames[kNumOps] = {"mmap",        "munmap",     "madvise",         "mprotect",
                                           "mincore",     "mbind",      "get_mempolicy",   "move_pages",
                                           "perf_event_open", "open",   "read",            "close",
                                           "mremap"};

bool same_word(const char* a, const char* a_end, const char* b) {
  while (a < a_end && *b != '\0' && *a == *b) ++a, ++b;
  return a == a_end && *b == '\0';
}

// Parses a decimal in [0, 1] ("0.05", "1", ".5") up to `end`.
bool parse_rate(const char* s, const char* end, double* out) {
  if (s == end) return false;
  double v = 0, scale = 1;
  bool dot = false, digits = false;
  for (; s < end; ++s) {
    if (*s == '.' && !dot) {
      dot = true;
    } else if (*s >= '0' && *s <= '9') {
      digits = true;
      if (dot) {
        scale /= 10;
        v += (*s - '0') * scale;
      } else {
        v = v * 10 + (*s - '0');
      }
      if (v > 1) return false;
    } else {
      return false;
    }
  }
  if (!digits) return false;
  *out = v;
  return true;
}

}  // namespace

const char* op_name(Op op) noexcept {
  const int i = static_cast<int>(op);
  return i >= 0 && i < kNumOps ? kOpNames[i] : "?";
}

uint64_t FaultCounts::total_failed() const {
  uint64_t t = partial_move_pages;
  for (uint64_t f : failed) t += f;
  return t;
}

bool parse_fault_spec(const char* text, FaultConfig* out) noexcept {
  if (text == nullptr) return false;
  FaultConfig c;
  const char* p = text;
  uint64_t seed = 0;
  const char* digits = p;
  while (*p >= '0' && *p <= '9') {
    if (seed > (UINT64_MAX - 9) / 10) return false;
    seed = seed * 10 + static_cast<uint64_t>(*p++ - '0');
  }
  if (p == digits || *p != ':') return false;
  c.seed = seed;
  const char* rate = ++p;
  while (*p != '\0' && *p != ':') ++p;
  if (!parse_rate(rate, p, &c.rate)) return false;
  if (*p == ':') {
    c.ops = 0;
    ++p;
    while (true) {
      const char* w = p;
      while (*p != '\0' && *p != ',') ++p;
      bool found = false;
      for (int i = 0; i < kNumOps && !found; ++i) {
        const uint32_t bit = op_bit(static_cast<Op>(i));
        if ((kAllFailableOps & bit) != 0 && same_word(w, p, kOpNames[i])) c.ops |= bit, found = true;
      }
      if (!found) return false;
      if (*p == '\0') break;
      ++p;
    }
  }
  *out = c;
  return true;
}

bool start_fault_injection(const FaultConfig& config) noexcept {
  if (g.running.load(std::memory_order_acquire)) return false;
  g.seed = config.seed;
  const double rate = config.rate < 0 ? 0 : config.rate > 1 ? 1 : config.rate;
  const double share = config.partial_share < 0 ? 0 : config.partial_share > 1 ? 1 : config.partial_share;
  g.threshold = static_cast<uint64_t>(rate * 4294967296.0);
  g.partial_threshold = static_cast<uint64_t>(share * 4294967296.0);
  g.ops = config.ops & kAllFailableOps;
  g.draws.store(0, std::memory_order_relaxed);
  for (int i = 0; i < kNumOps; ++i) {
    g.calls[i].store(0, std::memory_order_relaxed);
    g.failed[i].store(0, std::memory_order_relaxed);
  }
  g.partial.store(0, std::memory_order_relaxed);
  g.pages_failed.store(0, std::memory_order_relaxed);
  g.next = &active();
  g.running.store(true, std::memory_order_release);
  install(&kInjecting);
  return true;
}

void stop_fault_injection() noexcept {
  if (!g.running.load(std::memory_order_acquire)) return;
  install(g.next);
  g.running.store(false, std::memory_order_release);
}

bool fault_injection_running() noexcept { return g.running.load(std::memory_order_acquire); }

FaultCounts fault_counts() noexcept {
  FaultCounts c;
  for (int i = 0; i < kNumOps; ++i) {
    c.calls[i] = g.calls[i].load(std::memory_order_relaxed);
    c.failed[i] = g.failed[i].load(std::memory_order_relaxed);
  }
  c.partial_move_pages = g.partial.load(std::memory_order_relaxed);
  c.pages_failed = g.pages_failed.load(std::memory_order_relaxed);
  return c;
}

}  // namespace sentinel::os
