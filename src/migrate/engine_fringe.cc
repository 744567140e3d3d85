// The fringe of a move: the pages just outside the extent that share a huge-page-aligned region
// with its first or last page. move_pages(2) migrates a large folio (THP, mTHP) as a whole, so a
// folio that straddles the extent's boundary carries fringe pages along with the extent, and the
// neighbouring object silently changes node. This happens in practice: neighbouring anonymous
// mappings merge into one VMA, and khugepaged collapses 2 MiB regions of it across objects (seen in
// the two-node guest: guest.migration found whole neighbours on the wrong node after kDone moves).
//
// Engine thread only; uses the preallocated fringe and chunk buffers and allocates nothing.
// Invariant: at most 2 * (huge_ / page) fringe pages (one region below the extent, one above).
#include <fcntl.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "migrate/engine.h"
#include "migrate/engine_internal.h"
#include "os/os.h"

namespace sentinel::migrate {

size_t pmd_huge_size() {
  constexpr size_t kDefault = size_t{2} << 20;
  char buf[32];
  if (os::read_small_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", buf, sizeof buf) <= 0) {
    return kDefault;
  }
  const unsigned long long v = std::strtoull(buf, nullptr, 10);
  const unsigned long long page = static_cast<unsigned long long>(sysconf(_SC_PAGESIZE));
  // Anything odd (not a power of two above the page size, or absurdly large) falls back.
  if (v <= page || (v & (v - 1)) != 0 || v > (1ull << 30)) return kDefault;
  return static_cast<size_t>(v);
}

namespace {

uintptr_t page_size() { return static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)); }

// Splits the large folio holding the page at addr, if there is one. The kernel's MADV_COLD handler
// splits a large folio that the range covers only in part (6.1: every PTE-mapped one it meets and a
// PMD-mapped one not covered whole; 6.18: one whose pages the range does not all cover), so on a
// one-page range it splits exactly that folio; for a small page it is only an LRU hint (the page is
// deactivated). It fails quietly when the folio is locked or pinned at that moment, and on mlocked
// or hugetlb memory: fringe_restore() catches the consequence.
void split_folio_at(uintptr_t addr) {
#ifdef MADV_COLD
  os::madvise(reinterpret_cast<void*>(addr), page_size(), MADV_COLD);
#else
  (void)addr;
#endif
}

}  // namespace

size_t Engine::fringe_snapshot(uintptr_t start, uintptr_t end) {
  if (end <= start) return 0;
  const uintptr_t page = page_size();
  const uintptr_t lo = start & ~(uintptr_t{huge_} - 1);
  const uintptr_t hi = ((end - 1) | (uintptr_t{huge_} - 1)) + 1;
  size_t n = 0;
  for (uintptr_t a = lo; a < start; a += page) fringe_pages_[n++] = reinterpret_cast<void*>(a);
  const size_t n_below = n;
  for (uintptr_t a = end; a < hi; a += page) fringe_pages_[n++] = reinterpret_cast<void*>(a);
  if (n == 0) return 0;  // both ends huge-page aligned: no folio can straddle them
  if (os::move_pages(0, n, fringe_pages_.get(), nullptr, fringe_before_.get(), 0) < 0) return 0;
  // A folio that straddles a boundary has present pages on both sides of it.
  bool below = false, above = false;
  for (size_t k = 0; k < n; ++k) {
    if (fringe_before_[k] >= 0) (k < n_below ? below : above) = true;
  }
  if (below) split_folio_at(start);
  if (above) split_folio_at(end - page);
  return below || above ? n : 0;
}

void Engine::fringe_restore(size_t n, uintptr_t start, uintptr_t end, int node, int origin, MoveResult* r) {
  if (n == 0) return;
  void** pages = fringe_pages_.get();
  int* before = fringe_before_.get();
  int* after = fringe_after_.get();
  if (os::move_pages(0, n, pages, nullptr, after, 0) < 0) return;
  // Displaced: a present neighbour that is now on a node this move sent pages to. (Automatic NUMA
  // balancing may also have moved a default-policy neighbour meanwhile; sending it back is harmless.)
  size_t m = 0;
  for (size_t k = 0; k < n; ++k) {
    if (before[k] < 0 || after[k] == before[k] || (after[k] != node && after[k] != origin)) continue;
    pages[m] = pages[k];
    before[m] = before[k];
    ++m;
  }
  if (m == 0) return;

  // The split before the move did not take. The migrated folio is a new one: split it, send the
  // neighbours home, and move our own boundary pages again in case they went home with them.
  const uintptr_t page = page_size();
  split_folio_at(start);
  split_folio_at(end - page);
  os::move_pages(0, m, pages, before, after, MPOL_MF_MOVE);  // outcome checked below, per page
  const int ours = r->rolled_back ? origin
                   : (r->reason == FailReason::kNone && !r->cancel_requested) ? node
                                                                                : -1;
  uint64_t ours_off = 0;  // our pages that did not end on `ours`
  if (ours >= 0) {
    const uintptr_t first_end = std::min(end, (start | (uintptr_t{huge_} - 1)) + 1);
    const uintptr_t last_begin = std::max(first_end, (end - 1) & ~(uintptr_t{huge_} - 1));
    const uintptr_t ranges[2][2] = {{start, first_end}, {last_begin, end}};
    for (const auto& range : ranges) {
      for (uintptr_t a = range[0]; a < range[1];) {
        const size_t c = std::min<size_t>(config_.chunk_pages, (range[1] - a) / page);
        for (size_t k = 0; k < c; ++k) pages_[k] = reinterpret_cast<void*>(a + k * page);
        ChunkOutcome o = move_chunk(pages_.get(), nodes_.get(), status_.get(), c, ours, config_.busy_retries,
                                    incore_.get());
        ours_off += o.syscall_errno != 0 ? c : c - std::min<uint64_t>(c, o.moved + o.absent);
        a += c * page;
      }
    }
  }
  uint64_t still_off = 0;  // neighbours not back home
  if (os::move_pages(0, m, pages, nullptr, after, 0) < 0) {
    still_off = m;
  } else {
    for (size_t k = 0; k < m; ++k) still_off += after[k] != before[k];
  }
  stats_.pages_restored.fetch_add(m - still_off, std::memory_order_relaxed);
  if (ours_off + still_off == 0) return;
  // The huge page would not split (pinned or locked twice in a row): do not report a clean move.
  // Neighbours left displaced make this move fail too, though none of its own pages is off.
  r->pages_moved -= std::min(ours_off, r->pages_moved);
  r->pages_failed += ours_off;
  stats_.pages_busy.fetch_add(ours_off + still_off, std::memory_order_relaxed);
  if (r->reason == FailReason::kNone) r->reason = FailReason::kBusy;
}

}  // namespace sentinel::migrate
