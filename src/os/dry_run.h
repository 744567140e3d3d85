// The dry run's kernel (SENTINEL_DRY_RUN=1): a replacement for the OS layer's table (os/os.h) that keeps
// the placement of one address range (the object heap) in a book instead of asking the kernel to change
// it, so that managed mode runs completely on a machine without a slow node. The slow node exists only
// in the book; binds and moves to it, and back, are booked; placement queries about the range answer
// from the book; a move takes the time the tier model's migration channel would take for the pages it
// moves (the calling thread sleeps: the migration engine's thread, never the program's).
//
// The book: two bytes per page of the range, in memory mapped once at start (MAP_NORESERVE: only the
// part covering pages Sentinel binds or moves becomes resident). Per page:
//   location - the node the page is on (node + 1; 0: not booked, the kernel's answer holds);
//   policy   - the node its policy names (node + 1; 0: default policy) and whether it is MPOL_BIND.
// Presence (whether a page has been touched) stays the kernel's: every booked query asks the kernel
// first (mincore where the machine has one real node, else move_pages with nodes = NULL; neither changes
// anything) and books only present pages.
// Rules, as the kernel's: mbind sets the policy of every page; pages that are not present will fault in
// on the policy's node, so their location becomes it (mincore tells which are present); with
// MPOL_MF_MOVE present pages move too. move_pages moves present pages (absent ones keep the kernel's
// negative status) and reports the target as their status. MADV_DONTNEED drops pages: they come back on
// their policy's node. munmap, and mmap with MAP_FIXED, give the range a fresh book.
//
// Contract: that of os.h for every call; calls that do not lie wholly inside the booked range, and all
// calls other than mbind, get_mempolicy(MPOL_F_ADDR), move_pages, madvise, munmap, mmap and mremap (which
// gives both its ranges a fresh book), go to the
// table that was active before. A move or bind to a node that is neither the simulated one nor in
// `real_nodes` fails as the kernel fails it (ENODEV for move_pages, EINVAL for mbind), booking nothing.
//
// Cost: the booked calls make one or two real system calls (the presence query, mincore) instead of the
// placement call; a move then waits for migration_setup_ns + moved_bytes / migration_bw_gbps on a channel
// clock (moves queue behind each other as on one channel). It sleeps, never spins: the channel's clock is
// kept in the book, so a sleep that ends late is credited to the next move and waits under 50 us are not
// slept (pace in dry_run.cc). (A real move_pages keeps its thread busy copying all the time: the dry run
// is kinder to the program's other threads than a real channel.) Nothing allocates; no lock is held (book bytes are
// relaxed atomics: two threads booking one page at once leave one of their values, as two racing
// kernel calls would).
//
// Thread safety: start/stop as the fault injector's (call them from one thread, before and after the
// threads that use the OS layer). The booking calls themselves may run on any thread, inside
// malloc/free and in signal handlers (except the pacing sleep, which only moves make).
#pragma once

#include <cstddef>
#include <cstdint>

#include "os/os.h"

namespace sentinel::os {

struct DryRunConfig {
  uintptr_t start = 0;          // the booked range [start, start + len), page-aligned
  size_t len = 0;
  int simulated_node = -1;      // the slow node that exists only in the book (0..126)
  uint64_t real_nodes = 1;      // bit n: node n exists (binds and moves to it are booked too)
  double migration_bw_gbps = 0; // bytes per ns a move is paced at; 0: moves take no modeled time
  double migration_setup_ns = 0; // fixed modeled time of every move_pages call that moves (tier_model.h)
};

struct DryRunCounts {
  uint64_t binds = 0;            // mbind calls booked
  uint64_t moves = 0;            // move_pages calls that asked for moves, booked
  uint64_t queries = 0;          // move_pages / get_mempolicy queries answered from the book
  uint64_t pages_to_simulated = 0;    // present pages moved onto the simulated node
  uint64_t pages_from_simulated = 0;  // present pages moved off it
  uint64_t pages_on_simulated = 0;    // booked on the simulated node now (present or not)
  uint64_t paced_ns = 0;         // modeled channel time the moves slept for
};

// Installs the booking table over the active one, mapping the book. False when one is already running,
// the configuration is invalid (empty range, node out of range, simulated node also a real one), or
// the book cannot be mapped.
bool start_dry_run(const DryRunConfig& config) noexcept;
// Restores the table that was active before and unmaps the book. Counts stay readable.
void stop_dry_run() noexcept;
bool dry_run_running() noexcept;
// Books [addr, addr + len) as MADV_DONTNEED would leave it, without dropping anything: every page on its
// policy's node, where a dropped page faults in again. For pages a tiered machine returns and faults in
// on another node that the dry run keeps (the caller books those faults). False, booking nothing, when no
// dry run is running or the range is not wholly in the book.
bool dry_run_book_refault(void* addr, size_t len) noexcept;
DryRunCounts dry_run_counts() noexcept;

}  // namespace sentinel::os
