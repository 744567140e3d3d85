#include "migration.h"

#include <string>

#include "logging.h"
#include "manager.h"
#include "runtime.h"
#include "runtime_state.h"

namespace sentinel::rt {
namespace {

constexpr uint8_t kMoving = 1;
constexpr uint8_t kFreed = 2;

std::atomic<migrate::Engine*> g_engine{nullptr};
std::atomic<bool> g_usable{false};
std::atomic<uint64_t> g_refused_budget{0};
std::atomic<uint64_t> g_deferred_frees{0};
std::atomic<uint64_t> g_partial_moves_counted_fast{0};

uint8_t pool_of_node(int node) {
  return node == g_state.placer.fast_node() ? place::kFastPool : place::kSlowPool;
}

// Runs on the engine thread when a move ends.
class RuntimeOwner final : public migrate::Owner {
 public:
  void on_move_finished(uint64_t object_id, uint64_t generation, const migrate::MoveResult& result) override {
    const uint32_t slot = static_cast<uint32_t>(object_id);
    ObjectRecord& r = g_state.heap.record(slot);
    if (r.generation != generation || (r.move_flags.load(std::memory_order_acquire) & kMoving) == 0) return;
    // A move to the fast node that failed part way (pages busy or faulting) has left some pages there: the
    // object is counted on the fast node then, so the budget never misses a page that is in it. (Its other
    // pages are still slow: slower than planned, never over budget.)
    const bool partly_fast = result.state == migrate::State::kFailed && r.move_to_pool == place::kFastPool &&
                             result.pages_moved > 0;
    if (partly_fast) g_partial_moves_counted_fast.fetch_add(1, std::memory_order_relaxed);
    const bool moved = result.state == migrate::State::kDone || partly_fast;
    const uint8_t from = r.pool;
    g_state.placer.end_move(from, r.move_to_pool, r.extent_bytes, moved);
    if (moved) {
      r.pool = r.move_to_pool;
      r.bound_node_plus1 = static_cast<uint16_t>(result.target_node + 1);
    }
    manager_on_move_finished(slot, r.generation, r.move_to_pool, moved);
    const uint8_t before = r.move_flags.fetch_and(static_cast<uint8_t>(~kMoving), std::memory_order_acq_rel);
    if (before & kFreed) {
      // free() left the extent to us: hand it back to the heap now that no page is in flight.
      r.move_flags.store(0, std::memory_order_relaxed);
      release_extent(slot);
    }
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
  return migration_move_slot(slot, g_state.heap.record(slot).generation, pool_of_node(node), priority);
}

migrate::Ticket migration_move_slot(uint32_t slot, uint32_t generation, uint8_t to, migrate::Priority priority) noexcept {
  migrate::Engine* engine = g_engine.load(std::memory_order_acquire);
  if (engine == nullptr || !g_usable.load(std::memory_order_acquire)) return {};
  ObjectRecord& r = g_state.heap.record(slot);
  if (r.state.load(std::memory_order_acquire) != ExtentState::kLive || r.generation != generation) return {};
  const int node = g_state.placer.node_of_pool(to);
  if (node < 0) return {};
  uint8_t expected = 0;
  if (to == r.pool || !r.move_flags.compare_exchange_strong(expected, kMoving, std::memory_order_acq_rel)) {
    return {};  // already there, or a move of this object is in flight
  }
  if (to == place::kFastPool) make_fast_room(r.extent_bytes);
  if (!g_state.placer.begin_move(to, r.extent_bytes)) {
    r.move_flags.store(0, std::memory_order_release);
    g_refused_budget.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  r.move_to_pool = to;
  const migrate::Ticket t =
      engine->enqueue(slot, r.generation, reinterpret_cast<void*>(r.start), r.extent_bytes, node, priority,
                      migrate::Neighbours::kShareNoLargeFolio);  // the heap's layout (object_heap.h)
  if (!t.valid()) {
    g_state.placer.end_move(r.pool, to, r.extent_bytes, false);
    r.move_flags.store(0, std::memory_order_release);
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
  if ((r.move_flags.load(std::memory_order_acquire) & kMoving) == 0) return false;
  migrate::Engine* engine = g_engine.load(std::memory_order_acquire);
  if (engine == nullptr || !g_usable.load(std::memory_order_acquire)) {
    r.move_flags.store(0, std::memory_order_relaxed);  // forked child: nobody will finish the move
    return false;
  }
  if (engine->cancel(slot, r.generation) == migrate::CancelResult::kCancelled) {
    // Dropped from the queue before it ran: no callback will come; undo its accounting here.
    g_state.placer.end_move(r.pool, r.move_to_pool, r.extent_bytes, false);
    r.move_flags.store(0, std::memory_order_release);
    return false;
  }
  const uint8_t before = r.move_flags.fetch_or(kFreed, std::memory_order_acq_rel);
  if (before & kMoving) {
    g_deferred_frees.fetch_add(1, std::memory_order_relaxed);
    return true;  // the engine thread recycles it when the move ends
  }
  r.move_flags.store(0, std::memory_order_relaxed);  // the move ended meanwhile
  return false;
}

void migration_fork_child() noexcept { g_usable.store(false, std::memory_order_release); }

MigrationReport migration_report() noexcept {
  MigrationReport report;
  migrate::Engine* engine = g_engine.load(std::memory_order_acquire);
  report.enabled = engine != nullptr;
  if (engine != nullptr) report.engine = engine->snapshot();
  report.refused_budget = g_refused_budget.load(std::memory_order_relaxed);
  report.deferred_frees = g_deferred_frees.load(std::memory_order_relaxed);
  report.partial_moves_counted_fast = g_partial_moves_counted_fast.load(std::memory_order_relaxed);
  return report;
}

}  // namespace sentinel::rt
