// The migration engine inside the program: moves whole objects between the fast and the slow node on
// a background thread, for managed mode (preload/manager.h) and for programs (sentinel_move_object).
//
// Accounting: a queued or running move counts the object's bytes in both pools (BudgetPlacer's
// begin_move/end_move), so the fast budget holds while pages are in flight; a move to the fast node
// is refused when the budget has no room for it.
//
// An object freed while its move is queued: the move is cancelled and the extent recycled at once. An
// object freed while its move is running (or claimed, not yet queued): the extent is handed back to the
// heap when the move ends (by the engine thread) or the claim is dropped, so it is never reused while
// pages are being moved, and every byte a move reserved in the budget is given back exactly once (the
// claim protocol of migration.cc, tests/preload/free_vs_move_test.cc).
//
// Thread safety: every function may be called from any thread; migration_on_free() never blocks.
#pragma once

#include <chrono>
#include <cstdint>

#include "migrate/engine.h"

namespace sentinel::rt {

// Starts the engine when there are two tiers (initialisation only).
void migration_init(int fast_node, int slow_node) noexcept;
bool migration_enabled() noexcept;

// Queues a move of the live object that starts at p. Returns an invalid ticket when refused: not an
// object, a single memory node, no room in the fast budget, or a full queue.
migrate::Ticket migration_move(const void* p, int node, migrate::Priority priority) noexcept;
// The same for the object in `slot` if it still holds life `generation`, to heap pool `to_pool`.
migrate::Ticket migration_move_slot(uint32_t slot, uint32_t generation, uint8_t to_pool,
                                    migrate::Priority priority) noexcept;
migrate::State migration_wait(migrate::Ticket t, std::chrono::nanoseconds timeout) noexcept;

// Prefetches the plan executor found late (counted in the engine's statistics).
void migration_note_late(uint64_t n) noexcept;
// From free(), after the object is marked freed: true when the engine will recycle the extent.
bool migration_on_free(uint32_t slot) noexcept;
// In a forked child: the engine thread is gone; moves are neither waited for nor queued.
void migration_fork_child() noexcept;

struct MigrationReport {
  bool enabled = false;
  migrate::StatsSnapshot engine;
  uint64_t refused_budget = 0;
  uint64_t refused_tail = 0;  // the kernel would not drop a slow object's tail before its move to fast
  uint64_t deferred_frees = 0;
  uint64_t partial_moves_counted_fast = 0;  // failed moves to the fast node that left pages there
  uint64_t stale_completions = 0;  // completions whose claim was gone (0 unless the claim protocol breaks)
};
MigrationReport migration_report() noexcept;

}  // namespace sentinel::rt
