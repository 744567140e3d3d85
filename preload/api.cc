// The public C interface of include/sentinel/sentinel.h.
#include "sentinel/sentinel.h"

#include "migration.h"
#include "runtime_state.h"
#include "vocabulary.h"

using sentinel::SpinGuard;
using sentinel::rt::g_state;
using sentinel::rt::Phase;

extern "C" {

__attribute__((visibility("default"))) void sentinel_step_begin(void) {
  g_state.counters.step_marks.fetch_add(1, std::memory_order_relaxed);
  SpinGuard clock(g_state.clock_lock);
  g_state.steps.mark_step();
}

__attribute__((visibility("default"))) int sentinel_object_node(const void* p) {
  if (!g_state.heap.contains(p)) return -1;
  const uint32_t slot = g_state.heap.slot_of(p);
  if (slot == sentinel::kNoSlot) return -1;
  const auto& r = g_state.heap.record(slot);
  if (r.state.load(std::memory_order_acquire) != sentinel::ExtentState::kLive) return -1;
  return g_state.placer.node_of_pool(r.pool.load(std::memory_order_relaxed));
}

__attribute__((visibility("default"))) uint64_t sentinel_move_object(const void* p, int node) {
  return sentinel::rt::migration_move(p, node, sentinel::rt::kMovePriority).value;
}

__attribute__((visibility("default"))) int sentinel_wait_move(uint64_t ticket, int timeout_ms) {
  using sentinel::migrate::State;
  const auto timeout = timeout_ms < 0 ? std::chrono::nanoseconds::max() : std::chrono::nanoseconds(
                                                                             std::chrono::milliseconds(timeout_ms));
  switch (sentinel::rt::migration_wait(sentinel::migrate::Ticket{ticket}, timeout)) {
    case State::kDone: return 1;
    case State::kQueued:
    case State::kRunning: return 0;
    default: return -1;
  }
}

__attribute__((visibility("default"))) int sentinel_active(void) {
  return g_state.phase.load(std::memory_order_acquire) == Phase::kActive ? 1 : 0;
}

__attribute__((visibility("default"))) int sentinel_get_counters(struct sentinel_counters* out) {
  if (out == nullptr) return -1;
  const sentinel::StepSummary steps = sentinel::rt::step_summary();
  out->steps_detected = steps.complete_steps;
  out->current_step = steps.step_index;
  out->step_period = steps.period;
  out->objects_tracked = g_state.counters.objects_tracked.load(std::memory_order_relaxed);
  out->live_objects = g_state.counters.live_objects.load(std::memory_order_relaxed);
  out->live_bytes = g_state.counters.live_bytes.load(std::memory_order_relaxed);
  out->peak_object_bytes = g_state.counters.peak_live_bytes.load(std::memory_order_relaxed);
  return 0;
}

__attribute__((visibility("default"))) int sentinel_get_footprint(struct sentinel_footprint* out) {
  if (out == nullptr) return -1;
  const sentinel::HeapStats heap =
      g_state.heap.reserved_bytes() != 0 ? g_state.heap.stats() : sentinel::HeapStats{};
  out->extents = heap.extents_carved;
  out->extent_bytes = heap.carved_bytes;
  out->cached_bytes = heap.cached_bytes;
  out->cached_resident_bytes = heap.cached_resident_bytes;
  return 0;
}

}  // extern "C"
