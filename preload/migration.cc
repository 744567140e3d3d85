#include "migration.h"

#include <string>

#include "logging.h"
#include "manager.h"
#include "runtime.h"
#include "runtime_state.h"

namespace sentinel::rt {
namespace {

std::atomic<migrate::Engine*> g_engine{nullptr};
std::atomic<bool> g_usable{false};
std::atomic<uint64_t> g_refused_budget{0};
std::atomic<uint64_t> g_refused_tail{0};  // the kernel would not drop a slow object's tail (on_move_starting)
std::atomic<uint64_t> g_deferred_frees{0};
std::atomic<uint64_t> g_partial_moves_counted_fast{0};
std::atomic<uint64_t> g_stale_completions{0};

uint8_t pool_of_node(int node) {
  return node == g_state.placer.fast_node() ? place::kFastPool : place::kSlowPool;
}

// The claim protocol (ObjectRecord::move_claim, core/object_heap.h). A move claims the object's life
// (generation) before anything else, then checks that the life is still live; free() marks the object
// freed, then looks for a claim of its life. Both look with seq_cst, so at least one sees the other:
// either the mover sees the object freed and drops its claim, or free() sees the claim and hands the
// extent to it (kMoveFreed). Whoever ends a claim that free() handed the extent to recycles the extent,
// exactly once: every change of the word is a CAS that checks the generation, so a late drop of an
// earlier life's claim can never touch a later life's.
bool try_claim(ObjectRecord& r, uint32_t generation) noexcept {
  uint64_t expected = move_claim_word(generation, 0);
  return r.move_claim.compare_exchange_strong(expected, move_claim_word(generation, kMoveClaimed),
                                              std::memory_order_seq_cst);
}

// Ends the claim of `generation`. True when free() had handed the extent to it: the caller recycles it.
bool end_claim(ObjectRecord& r, uint32_t generation) noexcept {
  uint64_t w = r.move_claim.load(std::memory_order_acquire);
  while ((w >> 8) == generation && (w & kMoveClaimed) != 0) {
    if (r.move_claim.compare_exchange_weak(w, move_claim_word(generation, 0), std::memory_order_acq_rel)) {
      return (w & kMoveFreed) != 0;
    }
  }
  return false;
}

// Whether a move claim of `generation` holds the record (while one does, the extent is not recycled).
bool claimed_by(const ObjectRecord& r, uint32_t generation) noexcept {
  const uint64_t w = r.move_claim.load(std::memory_order_acquire);
  return (w >> 8) == generation && (w & kMoveClaimed) != 0;
}

// Drops a claim that did not (or no longer does) reach the engine; recycles the extent if free() left
// it to the claim.
void drop_claim(uint32_t slot, uint32_t generation) noexcept {
  if (end_claim(g_state.heap.record(slot), generation)) release_extent(slot);
}

// Runs on the engine thread when a move ends.
class RuntimeOwner final : public migrate::Owner {
 public:
  // A prefetch takes its fast memory when it starts, not when it is queued: the evictions queued ahead of
  // it (one FIFO channel) have given theirs back by now. Taken at queueing, it found them still counted
  // and dropped parked extents for room that the evictions were about to free; every page dropped faulted
  // in again at a later birth (densenet121, managed dry run at 20%: docs/placement.md).
  bool on_move_starting(uint64_t object_id, uint64_t life, int target_node) override {
    (void)target_node;
    ObjectRecord& r = g_state.heap.record(static_cast<uint32_t>(object_id));
    if (!claimed_by(r, static_cast<uint32_t>(life)) || r.move_reserved != 0) return true;
    // A slow object in the extent of a larger class leaves the pages past its charge behind: the budget
    // counts its charge, and the move would carry them into fast memory unseen (runtime.cc, place_extent).
    // The program never uses them (malloc_usable_size says the charge). If the kernel refuses, so is the move.
    if (r.slow_tail) {
      if (!drop_extent_tail(r, r.charge)) {
        g_refused_tail.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      r.slow_tail = false;
      g_state.counters.slow_tails_dropped_bytes.fetch_add(r.extent_bytes - r.charge, std::memory_order_relaxed);
    }
    make_fast_room(r.charge);
    if (!g_state.placer.begin_move(place::kFastPool, r.charge)) {
      g_refused_budget.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    r.move_reserved = 1;
    return true;
  }

  void on_move_finished(uint64_t object_id, uint64_t life, const migrate::MoveResult& result) override {
    const uint32_t slot = static_cast<uint32_t>(object_id);
    const uint32_t generation = static_cast<uint32_t>(life);
    ObjectRecord& r = g_state.heap.record(slot);
    if (!claimed_by(r, generation)) {
      // Cannot happen while the claim holds the extent (it is not recycled before the claim ends).
      g_stale_completions.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (r.move_reserved == 0) {
      // Refused when it was to start (no room), or dropped by the engine's stop before it ran: nothing
      // was counted for it, nothing moved.
      manager_on_move_finished(slot, generation, r.move_to_pool, false, result.reason == migrate::FailReason::kRefused);
      if (end_claim(r, generation)) release_extent(slot);
      return;
    }
    // A move to the fast node that failed part way sends its pages back (the engine's rollback); pages
    // that would not go back are still there: the object is counted on the fast node then, so the budget
    // never misses a page that is in it. (Its other pages are slow: slower than planned, never over
    // budget.)
    const bool partly_fast = result.state == migrate::State::kFailed && r.move_to_pool == place::kFastPool &&
                             result.pages_moved > 0;
    if (partly_fast) g_partial_moves_counted_fast.fetch_add(1, std::memory_order_relaxed);
    const bool moved = result.state == migrate::State::kDone || partly_fast;
    const uint8_t from = r.pool.load(std::memory_order_relaxed);
    g_state.placer.end_move(from, r.move_to_pool, r.charge, moved);
    if (moved) {
      r.pool.store(r.move_to_pool, std::memory_order_relaxed);
      r.bound_node_plus1.store(static_cast<uint16_t>(result.target_node + 1), std::memory_order_relaxed);
    }
    manager_on_move_finished(slot, generation, r.move_to_pool, moved);
    // free() left the extent to us: hand it back to the heap now that no page is in flight.
    if (end_claim(r, generation)) release_extent(slot);
  }
};

}  // namespace

void migration_init(int fast_node, int slow_node) noexcept {
  if (slow_node < 0) return;
  try {
    migrate::EngineConfig config;
    config.fast_node = fast_node;
    config.slow_node = slow_node;
    config.owner = new RuntimeOwner();  // never destroyed: the engine thread may call it during exit
    auto* engine = new migrate::Engine(config);
    std::string error;
    if (!engine->start(&error)) {
      log_write(LogLevel::kError, ("migration engine not started: " + error).c_str());
      return;
    }
    g_engine.store(engine, std::memory_order_release);
    g_usable.store(true, std::memory_order_release);
  } catch (...) {
  }
}

bool migration_enabled() noexcept { return g_usable.load(std::memory_order_acquire); }

migrate::Ticket migration_move(const void* p, int node, migrate::Priority priority) noexcept {
  const uint32_t slot = g_state.heap.slot_of(p);
  if (slot == kNoSlot) return {};
  if (node != g_state.placer.fast_node() && node != g_state.placer.slow_node()) return {};
  const uint32_t generation = g_state.heap.record(slot).generation.load(std::memory_order_acquire);
  return migration_move_slot(slot, generation, pool_of_node(node), priority);
}

migrate::Ticket migration_move_slot(uint32_t slot, uint32_t generation, uint8_t to, migrate::Priority priority) noexcept {
  migrate::Engine* engine = g_engine.load(std::memory_order_acquire);
  if (engine == nullptr || !g_usable.load(std::memory_order_acquire)) return {};
  const int node = g_state.placer.node_of_pool(to);
  if (node < 0) return {};
  ObjectRecord& r = g_state.heap.record(slot);
  // Claim first, then check the object is still this life, live (see try_claim). A claim refused: a move
  // of this life is in flight, or the life is over.
  if (!try_claim(r, generation)) return {};
  if (r.state.load(std::memory_order_seq_cst) != ExtentState::kLive || to == r.pool.load(std::memory_order_relaxed)) {
    drop_claim(slot, generation);  // freed meanwhile (then it may recycle the extent), or already there
    return {};
  }
  // A move to the fast pool is counted there when it starts (RuntimeOwner::on_move_starting).
  const bool reserve_now = to != place::kFastPool;
  if (reserve_now && !g_state.placer.begin_move(to, r.charge)) {
    g_refused_budget.fetch_add(1, std::memory_order_relaxed);
    drop_claim(slot, generation);
    return {};
  }
  r.move_to_pool = to;
  r.move_reserved = reserve_now ? 1 : 0;
  const migrate::Ticket t =
      engine->enqueue(slot, generation, reinterpret_cast<void*>(r.start), r.extent_bytes, node, priority,
                      migrate::Neighbours::kShareNoLargeFolio);  // the heap's layout (object_heap.h)
  if (!t.valid()) {
    if (reserve_now) g_state.placer.end_move(r.pool.load(std::memory_order_relaxed), to, r.charge, false);
    drop_claim(slot, generation);
  }
  return t;
}

migrate::State migration_wait(migrate::Ticket t, std::chrono::nanoseconds timeout) noexcept {
  migrate::Engine* engine = g_engine.load(std::memory_order_acquire);
  if (engine == nullptr || !t.valid()) return migrate::State::kUnknown;
  return engine->wait(t, timeout);
}

void migration_note_late(uint64_t n) noexcept {
  if (migrate::Engine* engine = g_engine.load(std::memory_order_acquire)) engine->note_late(n);
}

bool migration_on_free(uint32_t slot) noexcept {
  ObjectRecord& r = g_state.heap.record(slot);
  // The caller has just marked the object freed (seq_cst); a claim of its life made before that is seen
  // here (see try_claim), one made after it sees the object freed and drops itself.
  const uint32_t generation = r.generation.load(std::memory_order_relaxed);
  if ((r.move_claim.load(std::memory_order_seq_cst) & kMoveClaimed) == 0) return false;
  migrate::Engine* engine = g_engine.load(std::memory_order_acquire);
  if (engine == nullptr || !g_usable.load(std::memory_order_acquire)) {
    end_claim(r, generation);  // forked child: nobody will finish the move
    return false;
  }
  if (engine->cancel(slot, generation) == migrate::CancelResult::kCancelled) {
    // Dropped from the queue before it ran: no callback will come; undo its accounting here.
    if (r.move_reserved != 0) {
      g_state.placer.end_move(r.pool.load(std::memory_order_relaxed), r.move_to_pool, r.charge, false);
    }
    end_claim(r, generation);
    return false;
  }
  // Running, or not queued yet: hand the extent to the claim, unless it ended meanwhile.
  uint64_t w = r.move_claim.load(std::memory_order_acquire);
  while ((w >> 8) == generation && (w & kMoveClaimed) != 0) {
    if (r.move_claim.compare_exchange_weak(w, w | kMoveFreed, std::memory_order_acq_rel)) {
      g_deferred_frees.fetch_add(1, std::memory_order_relaxed);
      return true;  // the claim's end recycles it
    }
  }
  return false;  // the move ended meanwhile
}

void migration_fork_child() noexcept { g_usable.store(false, std::memory_order_release); }

MigrationReport migration_report() noexcept {
  MigrationReport report;
  migrate::Engine* engine = g_engine.load(std::memory_order_acquire);
  report.enabled = engine != nullptr;
  if (engine != nullptr) report.engine = engine->snapshot();
  report.refused_budget = g_refused_budget.load(std::memory_order_relaxed);
  report.refused_tail = g_refused_tail.load(std::memory_order_relaxed);
  report.deferred_frees = g_deferred_frees.load(std::memory_order_relaxed);
  report.partial_moves_counted_fast = g_partial_moves_counted_fast.load(std::memory_order_relaxed);
  report.stale_completions = g_stale_completions.load(std::memory_order_relaxed);
  return report;
}

}  // namespace sentinel::rt
