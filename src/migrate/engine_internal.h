// Internals shared by engine.cc (queue, thread) and engine_move.cc (page moving). Not public.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "migrate/engine.h"

namespace sentinel::migrate {

inline constexpr uint32_t kNil = UINT32_MAX;

// What one move_chunk() call did to its pages.
struct ChunkOutcome {
  uint64_t moved = 0, absent = 0, busy = 0, nomem = 0, other = 0;
  int syscall_errno = 0;  // move_pages itself failed
};

// engine_move.cc. Moves pages[0..n) (contiguous on entry) to node, retrying busy pages. `pages` is
// compacted in place during retries; nodes/status hold n entries, `scratch` at least n bytes.
ChunkOutcome move_chunk(void** pages, int* nodes, int* status, size_t n, int node, int retries,
                        unsigned char* scratch);

// engine_fringe.cc. The PMD huge page size (sysfs; 2 MiB if THP is not built in). Large folios of
// anonymous memory are at most this big and naturally aligned, so a folio that straddles an
// address lies within the huge-page-aligned region around it.
size_t pmd_huge_size();

// One queued, running or finished move. Fields other than the atomics are guarded by the engine
// lock, except that the engine thread reads the request fields of the slot it runs (they do not
// change while the slot is running).
struct Engine::Slot {
  uint64_t object_id = 0;
  uint64_t generation = 0;
  uintptr_t addr = 0;
  size_t len = 0;
  int target = -1;
  Priority priority = Priority::kBackground;
  Neighbours neighbours = Neighbours::kMayShareLargeFolios;
  uint32_t seq = 0;  // bumped when the slot is reused; part of the ticket
  State state = State::kUnknown;
  MoveResult result;
  uint32_t next = kNil;   // priority queue or free list
  uint32_t prev = kNil;   // priority queue
  uint32_t hnext = kNil;  // chain of queued slots in the same object-id hash bucket
  std::atomic<bool> cancel_requested{false};
};

}  // namespace sentinel::migrate
