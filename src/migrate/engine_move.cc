// The page-moving half of the migration engine: runs on the engine thread only, uses the
// preallocated chunk buffers, allocates nothing.
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "migrate/engine.h"
#include "migrate/engine_internal.h"
#include "os/measure_clock.h"
#include "os/os.h"
#include "os/spin_lock.h"

namespace sentinel::migrate {

namespace {

// Passes of a failed move's rollback over the pages it moved (each retries busy pages busy_retries times).
constexpr int kRollbackRounds = 4;

// A move's duration is measured on the program's clock, so that the channel's bandwidth and the
// phases it is compared with are in one clock (os/measure_clock.h: the emulator's, in the guest).
uint64_t now_ns() { return os::measure_ns(); }

bool is_node_error(int err) { return err == ENODEV || err == EINVAL || err == EACCES; }

// Whether [addr, addr + len) is entirely mapped: mincore fails with ENOMEM on unmapped holes.
bool mapped(void* addr, size_t len, unsigned char* scratch) { return os::mincore(addr, len, scratch) == 0; }

// The node most pages of the chunk are on now (-1 if none is present).
int majority_node(void** pages, int* status, size_t n) {
  if (os::move_pages(0, n, pages, nullptr, status, 0) < 0) return -1;
  int best = -1, best_count = 0;
  for (size_t k = 0; k < n; ++k) {
    if (status[k] < 0) continue;
    int c = 0;
    for (size_t j = k; j < n && c <= static_cast<int>(n / 2); ++j) c += status[j] == status[k];
    if (c > best_count) best = status[k], best_count = c;
    if (best_count > static_cast<int>(n / 2)) break;
  }
  return best;
}

// How many of the npages pages from start are on `node` now, queried in chunks of `chunk` pages; false if
// the kernel would not say.
bool count_on_node(uintptr_t start, size_t npages, size_t chunk, int node, void** pages, int* status,
                   uint64_t* count) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uint64_t on = 0;
  for (size_t off = 0; off < npages;) {
    const size_t n = std::min(chunk, npages - off);
    for (size_t k = 0; k < n; ++k) pages[k] = reinterpret_cast<void*>(start + (off + k) * page);
    if (os::move_pages(0, n, pages, nullptr, status, 0) < 0) return false;
    for (size_t k = 0; k < n; ++k) on += status[k] == node;
    off += n;
  }
  *count = on;
  return true;
}

}  // namespace

ChunkOutcome move_chunk(void** pages, int* nodes, int* status, size_t n, int node, int retries,
                        unsigned char* scratch) {
  ChunkOutcome out;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t k = 0; k < n; ++k) nodes[k] = node;
  int chunk_mapped = -1;  // -1 unknown, else bool; only meaningful while pages are contiguous
  for (int attempt = 0;; ++attempt) {
    const long rc = os::move_pages(0, n, pages, nodes, status, MPOL_MF_MOVE);
    if (rc > 0) {
      // The kernel could not migrate rc pages and then leaves the status of the whole batch it was
      // working on unwritten (mm/migrate.c, move_pages_and_store_status): status[] may hold values of an
      // earlier call. Ask where every page is now; pages not on the target are retried below.
      if (os::move_pages(0, n, pages, nullptr, status, 0) < 0) {
        out.syscall_errno = errno;
        return out;
      }
    }
    if (rc < 0) {
      if (errno != ENOMEM) {
        out.syscall_errno = errno;
        return out;
      }
      // Older kernels (e.g. 6.1) fail the whole call with ENOMEM when the target node is full,
      // leaving the status array unset. Ask where every page is now: those not on the target
      // count as ENOMEM failures.
      if (os::move_pages(0, n, pages, nullptr, status, 0) < 0) {
        out.syscall_errno = ENOMEM;
        return out;
      }
      for (size_t k = 0; k < n; ++k) {
        if (status[k] == node) ++out.moved;
        else if (status[k] == -ENOENT || status[k] == -EFAULT) ++out.absent;
        else ++out.nomem;
      }
      if (out.nomem == 0) out.nomem = 1;  // the kernel said ENOMEM: never report success
      return out;
    }
    size_t again = 0;
    for (size_t k = 0; k < n; ++k) {
      int s = status[k];
      if (s == -EFAULT || s == -ENOENT) {
        // Kernels before ~6.5 report a page that was never touched (no page table yet, or the
        // zero page) as -EFAULT, like an unmapped address: tell them apart with mincore. And a page
        // the kernel could not see at that moment (its PTE cleared while khugepaged collapses the
        // region, or a migration entry) is reported -ENOENT although it holds data: mincore calls it
        // resident. Seen in the two-node guest under injected faults: a whole object "absent", the move
        // reported done, the object still on its old node. Such pages are retried; after the retries
        // they count as absent (the zero page is resident too, and it never moves).
        bool is_mapped;
        unsigned char vec = 0;
        if (attempt == 0 && chunk_mapped < 0) chunk_mapped = mapped(pages[0], n * page, scratch);
        if (attempt == 0 && chunk_mapped == 1) {
          is_mapped = true;
          vec = scratch[k];
        } else {
          is_mapped = mapped(pages[k], page, &vec);
        }
        if (!is_mapped) {
          s = s == -EFAULT ? -EFAULT : -ENOENT;  // mincore failed: trust the kernel's -ENOENT
        } else if ((vec & 1) != 0 && attempt < retries) {
          s = -EAGAIN;  // resident: retried below
        } else {
          s = -ENOENT;
        }
      }
      if (s == node) {
        ++out.moved;
      } else if (s == -ENOENT) {
        ++out.absent;
      } else if (s == -ENOMEM) {
        ++out.nomem;
      } else if (s == -EBUSY || s == -EAGAIN || s >= 0) {
        // s >= 0 but another node: the kernel left the page in place for a transient reason.
        pages[again++] = pages[k];
      } else {
        ++out.other;
      }
    }
    if (again == 0) return out;
    if (attempt >= retries) {
      out.busy += again;
      return out;
    }
    n = again;
    os::yield_cpu();  // give whoever holds the page (e.g. a pinned I/O or a fault) a moment
  }
}

void Engine::execute(uint32_t i) {
  Slot& s = slots_[i];
  const uint64_t t0 = now_ns();
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = s.addr & ~(page - 1);
  const uintptr_t end = (s.addr + s.len + page - 1) & ~(page - 1);
  const size_t npages = (end - start) / page;
  const int node = s.target;

  MoveResult r;
  r.target_node = node;
  r.pages = npages;
  int origin = -1;
  size_t done_pages = 0;  // pages of the extent processed so far
  bool nomem = false;
  // Before anything moves: split huge pages that straddle the extent, note where the neighbours are.
  const size_t nfringe = s.neighbours == Neighbours::kShareNoLargeFolio ? 0 : fringe_snapshot(start, end);
  for (size_t off = 0; off < npages;) {
    if (s.cancel_requested.load(std::memory_order_relaxed)) {
      r.cancel_requested = true;
      break;
    }
    const size_t n = std::min(config_.chunk_pages, npages - off);
    for (size_t k = 0; k < n; ++k) pages_[k] = reinterpret_cast<void*>(start + (off + k) * page);
    if (off == 0 && config_.rollback_on_failure) {
      origin = majority_node(pages_.get(), origin_.get(), n);
    }
    ChunkOutcome c = move_chunk(pages_.get(), nodes_.get(), status_.get(), n, node, config_.busy_retries,
                                incore_.get());
    if (c.syscall_errno != 0) {
      r.reason = is_node_error(c.syscall_errno) ? FailReason::kInvalidNode : FailReason::kSyscall;
      r.pages_failed += n;
      stats_.pages_other_error.fetch_add(n, std::memory_order_relaxed);
      break;
    }
    r.pages_moved += c.moved;
    r.pages_absent += c.absent;
    r.pages_failed += c.busy + c.nomem + c.other;
    stats_.pages_busy.fetch_add(c.busy, std::memory_order_relaxed);
    stats_.pages_nomem.fetch_add(c.nomem, std::memory_order_relaxed);
    stats_.pages_other_error.fetch_add(c.other, std::memory_order_relaxed);
    stats_.pages_absent.fetch_add(c.absent, std::memory_order_relaxed);
    off += n;
    done_pages = off;
    if (c.nomem > 0) {
      nomem = true;
      r.reason = FailReason::kNoMemory;
      break;
    }
    if (r.reason == FailReason::kNone && c.busy > 0) r.reason = FailReason::kBusy;
    if (r.reason == FailReason::kNone && c.other > 0) r.reason = FailReason::kFault;
  }

  const bool failed = !r.cancel_requested && (nomem || r.reason != FailReason::kNone);
  if (failed && config_.rollback_on_failure && origin >= 0 && origin != node && r.pages_moved > 0) {
    // The move failed part way (target full, pages busy or faulting): send what moved back, so the
    // object is whole where it was rather than split across two nodes (its accounting stays "where it
    // was"). Pages that will not go back stay counted as moved.
    // A page that does not go back at once (busy, or a call that failed) gets more rounds: a split object
    // is wrong in the books until something moves it again.
    // A large folio that straddles the last chunk's end migrated whole: the rollback reaches one huge page
    // past it (where none straddled, those pages are on their node already and the kernel leaves them).
    const size_t back_pages = std::min(npages, done_pages + huge_ / page);
    uint64_t still_away = 0;
    for (int round = 0; round < kRollbackRounds; ++round) {
      if (round > 0) os::yield_cpu();
      still_away = 0;
      for (size_t off = 0; off < back_pages;) {
        const size_t n = std::min(config_.chunk_pages, back_pages - off);
        for (size_t k = 0; k < n; ++k) pages_[k] = reinterpret_cast<void*>(start + (off + k) * page);
        ChunkOutcome c = move_chunk(pages_.get(), nodes_.get(), status_.get(), n, origin, config_.busy_retries,
                                    incore_.get());
        still_away += c.syscall_errno != 0 ? n : c.busy + c.nomem + c.other;
        off += n;
      }
      if (still_away == 0) break;
    }
    r.rolled_back = true;
    r.pages_moved = std::min<uint64_t>(r.pages_moved, still_away);
    stats_.rollbacks.fetch_add(1, std::memory_order_relaxed);
  }

  // Neighbours that a huge page dragged along go back; may turn the move into a kBusy failure.
  fringe_restore(nfringe, start, end, node, origin, &r);

  // A move that stopped early is counted again over the whole extent: a large folio that straddles the end
  // of the chunk where it stopped migrates whole, so pages the move never reached can be on the target too
  // (seen in the guest with the target full: 881 pages on node 1, 799 counted chunk by chunk).
  uint64_t on_target = 0;
  if ((r.cancel_requested || r.reason != FailReason::kNone) && npages > 0 &&
      count_on_node(start, npages, config_.chunk_pages, node, pages_.get(), status_.get(), &on_target)) {
    r.pages_moved = on_target;
  }

  if (r.cancel_requested) {
    r.state = State::kCancelled;
  } else if (r.reason != FailReason::kNone) {
    r.state = State::kFailed;
  } else {
    r.state = State::kDone;
    if (config_.set_policy && npages > 0 && node >= 0 && node < 1024) {
      // Pages never touched yet (absent) must also fault in on the target node.
      unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {};
      mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
      os::mbind(reinterpret_cast<void*>(start), npages * page, config_.bind_policy ? MPOL_BIND : MPOL_PREFERRED, mask,
            1024, 0);
    }
  }
  account(r, now_ns() - t0);
  finish(i, r);
}

void Engine::account(const MoveResult& r, uint64_t elapsed_ns) {
  stats_.move_ns.fetch_add(elapsed_ns, std::memory_order_relaxed);
  if (r.state == State::kFailed) stats_.moves_failed.fetch_add(1, std::memory_order_relaxed);
  if (r.state != State::kDone) return;
  stats_.moves_done.fetch_add(1, std::memory_order_relaxed);
  const uint64_t bytes = r.pages_moved * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (bytes > 0) stats_.channel.add(bytes, elapsed_ns);
  if (config_.slow_node >= 0 && r.target_node == config_.slow_node) {
    stats_.objects_to_slow.fetch_add(1, std::memory_order_relaxed);
    stats_.bytes_to_slow.fetch_add(bytes, std::memory_order_relaxed);
  } else if (config_.slow_node >= 0 && r.target_node == config_.fast_node) {
    stats_.objects_to_fast.fetch_add(1, std::memory_order_relaxed);
    stats_.bytes_to_fast.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    stats_.objects_other.fetch_add(1, std::memory_order_relaxed);
    stats_.bytes_other.fetch_add(bytes, std::memory_order_relaxed);
  }
}

}  // namespace sentinel::migrate
