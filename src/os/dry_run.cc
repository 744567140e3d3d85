#include "os/dry_run.h"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cerrno>

namespace sentinel::os {
namespace {

constexpr uintptr_t kPage = 4096;
constexpr int kMaxNode = 126;        // node + 1 fits seven bits
constexpr uint8_t kBindBit = 0x80;   // policy byte: MPOL_BIND (else MPOL_PREFERRED)
constexpr size_t kChunk = 256;       // pages per presence query (stack arrays)

struct Page {
  std::atomic<uint8_t> location;  // node + 1; 0: the kernel's answer holds
  std::atomic<uint8_t> policy;    // node + 1 | kBindBit; 0: default policy
};
static_assert(sizeof(Page) == 2, "two bytes per page");

struct State {
  std::atomic<bool> running{false};
  const Calls* next = nullptr;
  uintptr_t start = 0, end = 0;
  Page* book = nullptr;
  size_t book_bytes = 0;
  int simulated = -1;
  uint64_t real_nodes = 0;
  double bw = 0;
  double setup_ns = 0;
  std::atomic<uint64_t> channel_free_ns{0};  // when the modeled channel finishes the moves booked so far
  std::atomic<uint64_t> overslept_ns{0};     // how late the last pacing sleep ended (pace)
  std::atomic<uint64_t> binds{0}, moves{0}, queries{0}, to_sim{0}, from_sim{0}, on_sim{0}, paced_ns{0};
};
constinit State g;

bool covered(uintptr_t a, uintptr_t len) { return a >= g.start && a < g.end && len <= g.end - a; }
Page& page_at(uintptr_t a) { return g.book[(a - g.start) / kPage]; }
bool known_node(int node) {
  return node == g.simulated || (node >= 0 && node < 64 && ((g.real_nodes >> node) & 1) != 0);
}

// Books the page's new location and keeps the simulated node's page count exact.
void set_location(Page& p, uint8_t location) {
  const uint8_t sim = static_cast<uint8_t>(g.simulated + 1);
  const uint8_t old = p.location.exchange(location, std::memory_order_relaxed);
  if (old == location) return;
  if (old == sim) g.on_sim.fetch_sub(1, std::memory_order_relaxed);
  if (location == sim) g.on_sim.fetch_add(1, std::memory_order_relaxed);
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The modeled channel moves `pages` pages after the moves booked before: sleep until it is done.
//
// The channel's clock is the book's (channel_free_ns), not the sleeps': a sleep ends 50-100 us late on a
// busy machine, and on the many small moves of a step (a 64 KiB object costs 20 us at 3.3 GB/s) that
// lateness would make the channel several times slower than modeled. So the next move may start as far
// in the past as this one returned after its modeled end (as if the call had returned on time), and a
// wait shorter than kMinSleepNs is not slept at all (that move reports done up to kMinSleepNs early; the next one waits for it). Never spinning matters
// more than a few microseconds of completion time: on a machine whose cores the program's threads all
// use, a spinning engine thread takes its time from them.
constexpr uint64_t kMinSleepNs = 50000;
void pace(uint64_t pages) {
  if (pages == 0 || g.bw <= 0) return;
  const uint64_t cost = static_cast<uint64_t>(g.setup_ns + static_cast<double>(pages * kPage) / g.bw);
  const uint64_t now = now_ns();
  const uint64_t credit = g.overslept_ns.exchange(0, std::memory_order_relaxed);
  const uint64_t earliest = now > credit ? now - credit : 0;
  uint64_t free_at = g.channel_free_ns.load(std::memory_order_relaxed);
  uint64_t done;
  do {
    done = (free_at > earliest ? free_at : earliest) + cost;
  } while (!g.channel_free_ns.compare_exchange_weak(free_at, done, std::memory_order_relaxed));
  g.paced_ns.fetch_add(cost, std::memory_order_relaxed);
  uint64_t back = now;
  if (done >= now + kMinSleepNs) {
    timespec until{static_cast<time_t>(done / 1000000000ull), static_cast<long>(done % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
    }
    back = now_ns();
  }
  // Returning after the move's modeled end (a late wake, or a move that fit in the credit) is lateness
  // the next move gets back.
  g.overslept_ns.store(back > done ? back - done : 0, std::memory_order_relaxed);
}

constexpr unsigned long kBits = 8 * sizeof(unsigned long);
// Words of a node mask the kernel reads or writes for `maxnode`: it uses maxnode - 1 bits, as libnuma
// passes them.
unsigned long mask_words(unsigned long maxnode) { return maxnode <= 1 ? 0 : (maxnode - 1 + kBits - 1) / kBits; }

// The lowest node in a policy mask (-1: empty).
int lowest_node(const unsigned long* mask, unsigned long maxnode) {
  if (mask == nullptr) return -1;
  for (unsigned long w = 0; w < mask_words(maxnode) && w * kBits <= static_cast<unsigned long>(kMaxNode); ++w) {
    if (mask[w] != 0) return static_cast<int>(w * kBits) + __builtin_ctzl(mask[w]);
  }
  return -1;
}

void clear_book(uintptr_t a, uintptr_t len) {
  for (uintptr_t p = a & ~(kPage - 1); p < a + len; p += kPage) {
    set_location(page_at(p), 0);
    page_at(p).policy.store(0, std::memory_order_relaxed);
  }
}

void* d_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  void* r = g.next->mmap(addr, len, prot, flags, fd, off);
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (r != MAP_FAILED && (flags & MAP_FIXED) != 0 && covered(a, len)) clear_book(a, len);
  return r;
}

int d_munmap(void* addr, size_t len) {
  const int r = g.next->munmap(addr, len);
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (r == 0 && covered(a, len)) clear_book(a, len);
  return r;
}

// Dropped pages fault in again on their policy's node (or where the kernel puts them by default).
void book_refault(uintptr_t a, size_t len) {
  for (uintptr_t p = a & ~(kPage - 1); p < a + len; p += kPage) {
    set_location(page_at(p), static_cast<uint8_t>(page_at(p).policy.load(std::memory_order_relaxed) & ~kBindBit));
  }
}

int d_madvise(void* addr, size_t len, int advice) {
  const int r = g.next->madvise(addr, len, advice);
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (r != 0 || advice != MADV_DONTNEED || !covered(a, len)) return r;
  book_refault(a, len);
  return r;
}

long d_mbind(void* addr, unsigned long len, int mode, const unsigned long* mask, unsigned long maxnode,
             unsigned flags) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (!covered(a, len)) return g.next->mbind(addr, len, mode, mask, maxnode, flags);
  if ((a & (kPage - 1)) != 0) {
    errno = EINVAL;
    return -1;
  }
  uint8_t policy = 0;
  if (mode != MPOL_DEFAULT) {
    const int node = lowest_node(mask, maxnode);
    if ((mode != MPOL_PREFERRED && mode != MPOL_BIND) || node < 0 || !known_node(node)) {
      errno = EINVAL;
      return -1;
    }
    policy = static_cast<uint8_t>((node + 1) | (mode == MPOL_BIND ? kBindBit : 0));
  }
  const uint8_t target = static_cast<uint8_t>(policy & ~kBindBit);
  const bool move = (flags & (MPOL_MF_MOVE | MPOL_MF_MOVE_ALL)) != 0;
  uint64_t moved = 0;
  unsigned char vec[kChunk];
  const uintptr_t end = a + ((len + kPage - 1) & ~(kPage - 1));
  for (uintptr_t c = a; c < end; c += kChunk * kPage) {
    const uintptr_t n = (end - c) / kPage < kChunk ? (end - c) / kPage : kChunk;
    const bool know = g.next->mincore(reinterpret_cast<void*>(c), n * kPage, vec) == 0;
    for (uintptr_t k = 0; k < n; ++k) {
      Page& p = page_at(c + k * kPage);
      p.policy.store(policy, std::memory_order_relaxed);
      const bool present = know && (vec[k] & 1) != 0;
      if (!present) {
        set_location(p, target);  // faults in on the policy's node
      } else if (move && target != 0 && p.location.load(std::memory_order_relaxed) != target) {
        set_location(p, target);
        ++moved;
      }
    }
  }
  g.binds.fetch_add(1, std::memory_order_relaxed);
  pace(moved);
  return 0;
}

long d_get_mempolicy(int* mode, unsigned long* mask, unsigned long maxnode, const void* addr, unsigned long flags) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (flags != MPOL_F_ADDR || !covered(a, 1)) return g.next->get_mempolicy(mode, mask, maxnode, addr, flags);
  const uint8_t policy = page_at(a).policy.load(std::memory_order_relaxed);
  g.queries.fetch_add(1, std::memory_order_relaxed);
  if (mask != nullptr) {
    for (unsigned long w = 0; w < mask_words(maxnode); ++w) mask[w] = 0;
  }
  if (mode != nullptr) *mode = policy == 0 ? MPOL_DEFAULT : (policy & kBindBit) != 0 ? MPOL_BIND : MPOL_PREFERRED;
  const int node = (policy & ~kBindBit) - 1;
  if (node >= 0 && mask != nullptr && static_cast<unsigned long>(node) + 1 < maxnode) {
    mask[node / kBits] |= 1ul << (node % kBits);
  }
  return 0;
}

// Where the kernel has each page, as move_pages(nodes = NULL) says it: status[k] = its node, or a negative
// errno. Presence is the kernel's; a query changes nothing. With one real node every present page is on
// it, and mincore says which are present for a fraction of the query's cost (move_pages looks up each
// page's folio; mincore reads the page tables a run of pages at a time): the engine asks this for every
// page it moves, twice for a move's first chunk. mincore calls a mapped zero page present, which the
// kernel's query does not (such a page is booked as moved). Pages not in runs mincore can read (a hole,
// an injected failure) get the kernel's query.
bool presence(unsigned long count, void** pages, int* status) {
  const uint64_t real = g.real_nodes;
  if (real != 0 && (real & (real - 1)) == 0) {
    const int node = __builtin_ctzll(real);
    unsigned char vec[kChunk];
    unsigned long k = 0;
    while (k < count) {
      const uintptr_t first = reinterpret_cast<uintptr_t>(pages[k]) & ~(kPage - 1);
      unsigned long n = 1;
      while (k + n < count && n < kChunk &&
             (reinterpret_cast<uintptr_t>(pages[k + n]) & ~(kPage - 1)) == first + n * kPage) {
        ++n;
      }
      if (g.next->mincore(reinterpret_cast<void*>(first), n * kPage, vec) != 0) break;
      for (unsigned long j = 0; j < n; ++j) status[k + j] = (vec[j] & 1) != 0 ? node : -ENOENT;
      k += n;
    }
    if (k == count) return true;
  }
  return g.next->move_pages(0, count, pages, nullptr, status, 0) >= 0;
}

long d_move_pages(int pid, unsigned long count, void** pages, const int* nodes, int* status, int flags) {
  if (pid != 0 || count == 0 || pages == nullptr || status == nullptr) {
    return g.next->move_pages(pid, count, pages, nodes, status, flags);
  }
  for (unsigned long k = 0; k < count; ++k) {
    if (!covered(reinterpret_cast<uintptr_t>(pages[k]), 1)) {
      return g.next->move_pages(pid, count, pages, nodes, status, flags);
    }
  }
  if (nodes != nullptr) {
    for (unsigned long k = 0; k < count; ++k) {
      if (!known_node(nodes[k])) {
        errno = ENODEV;
        return -1;
      }
    }
  }
  if (!presence(count, pages, status)) return -1;
  uint64_t moved = 0, to_sim = 0, from_sim = 0;
  const uint8_t sim = static_cast<uint8_t>(g.simulated + 1);
  for (unsigned long k = 0; k < count; ++k) {
    if (status[k] < 0) continue;  // not present (or not mapped): the kernel's answer stands
    Page& p = page_at(reinterpret_cast<uintptr_t>(pages[k]));
    const uint8_t booked = p.location.load(std::memory_order_relaxed);
    const uint8_t now = booked != 0 ? booked : static_cast<uint8_t>(status[k] + 1);
    if (nodes == nullptr) {
      status[k] = now - 1;
      continue;
    }
    const auto target = static_cast<uint8_t>(nodes[k] + 1);
    if (now != target) {
      set_location(p, target);
      ++moved;
      to_sim += target == sim;
      from_sim += now == sim;
    } else if (booked == 0) {
      set_location(p, target);
    }
    status[k] = nodes[k];
  }
  if (nodes == nullptr) {
    g.queries.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  g.moves.fetch_add(1, std::memory_order_relaxed);
  g.to_sim.fetch_add(to_sim, std::memory_order_relaxed);
  g.from_sim.fetch_add(from_sim, std::memory_order_relaxed);
  pace(moved);
  return 0;
}

int d_mprotect(void* addr, size_t len, int prot) { return g.next->mprotect(addr, len, prot); }
int d_mincore(void* addr, size_t len, unsigned char* vec) { return g.next->mincore(addr, len, vec); }
int d_perf_event_open(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags) {
  return g.next->perf_event_open(attr, tid, cpu, group_fd, flags);
}
int d_open_read(const char* path, int flags) { return g.next->open_read(path, flags); }
ssize_t d_read(int fd, void* buf, size_t len) { return g.next->read(fd, buf, len); }
int d_close(int fd) { return g.next->close(fd); }
// Pages that move are not booked (the runtime copies instead of remapping in a dry run): the ranges it
// touches get a fresh book, as munmap and mmap do.
void* d_mremap(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr) {
  void* r = g.next->mremap(old_addr, old_len, new_len, flags, new_addr);
  if (r == MAP_FAILED) return r;
  const auto a = reinterpret_cast<uintptr_t>(old_addr);
  const auto b = reinterpret_cast<uintptr_t>(r);
  if (covered(a, old_len)) clear_book(a, old_len);
  if (covered(b, new_len)) clear_book(b, new_len);
  return r;
}

constexpr Calls kBooking = {d_mmap,          d_munmap,       d_madvise,         d_mprotect,
                            d_mincore,       d_mbind,        d_get_mempolicy,   d_move_pages,
                            d_perf_event_open, d_open_read,  d_read,            d_close,
                            d_mremap};

}  // namespace

bool start_dry_run(const DryRunConfig& config) noexcept {
  if (g.running.load(std::memory_order_acquire)) return false;
  if (config.len == 0 || (config.start & (kPage - 1)) != 0 || config.simulated_node < 0 ||
      config.simulated_node > kMaxNode ||
      (config.simulated_node < 64 && ((config.real_nodes >> config.simulated_node) & 1) != 0)) {
    return false;
  }
  const Calls& next = active();
  const size_t pages = (config.len + kPage - 1) / kPage;
  const size_t bytes = (pages * sizeof(Page) + kPage - 1) & ~(kPage - 1);
  void* book = next.mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (book == MAP_FAILED) return false;
  g.next = &next;
  g.book = static_cast<Page*>(book);
  g.book_bytes = bytes;
  g.start = config.start;
  g.end = config.start + pages * kPage;
  g.simulated = config.simulated_node;
  g.real_nodes = config.real_nodes;
  g.bw = config.migration_bw_gbps;
  g.setup_ns = config.migration_setup_ns;
  g.channel_free_ns.store(0, std::memory_order_relaxed);
  g.overslept_ns.store(0, std::memory_order_relaxed);
  for (auto* c : {&g.binds, &g.moves, &g.queries, &g.to_sim, &g.from_sim, &g.on_sim, &g.paced_ns}) {
    c->store(0, std::memory_order_relaxed);
  }
  g.running.store(true, std::memory_order_release);
  install(&kBooking);
  return true;
}

void stop_dry_run() noexcept {
  if (!g.running.load(std::memory_order_acquire)) return;
  install(g.next);
  g.running.store(false, std::memory_order_release);
  g.next->munmap(g.book, g.book_bytes);
  g.book = nullptr;
}

bool dry_run_running() noexcept { return g.running.load(std::memory_order_acquire); }

bool dry_run_book_refault(void* addr, size_t len) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (!g.running.load(std::memory_order_acquire) || !covered(a, len)) return false;
  book_refault(a, len);
  return true;
}

DryRunCounts dry_run_counts() noexcept {
  DryRunCounts c;
  c.binds = g.binds.load(std::memory_order_relaxed);
  c.moves = g.moves.load(std::memory_order_relaxed);
  c.queries = g.queries.load(std::memory_order_relaxed);
  c.pages_to_simulated = g.to_sim.load(std::memory_order_relaxed);
  c.pages_from_simulated = g.from_sim.load(std::memory_order_relaxed);
  c.pages_on_simulated = g.on_sim.load(std::memory_order_relaxed);
  c.paced_ns = g.paced_ns.load(std::memory_order_relaxed);
  return c;
}

}  // namespace sentinel::os
