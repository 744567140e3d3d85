#include "stats_json.h"

#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "core/output_file.h"
#include "core/stats_keys.h"
#include "core/text_buf.h"
#include "fault_cost.h"
#include "manager.h"
#include "migration.h"
#include "object_path.h"
#include "os/dry_run.h"
#include "profiler.h"
#include "os/measure_clock.h"
#include "runtime_state.h"

namespace sentinel::rt {
namespace {

using Json = nlohmann::ordered_json;
namespace key = stats_key;

void add_run(Json& j, const State& s) {
  const Counters& c = s.counters;
  const HeapStats heap = s.heap.reserved_bytes() != 0 ? s.heap.stats() : HeapStats{};
  const StepSummary d = step_summary();
  j[key::kPid] = static_cast<int>(s.init_pid);
  j[key::kRank] = s.rank < 0 ? Json(nullptr) : Json(s.rank);
  j[key::kForkedChildren] = c.forked_children.load();
  j[key::kRuntimeSeconds] = static_cast<double>(now_ns() - s.start_ns) / 1e9;
  j[key::kMeasureClock] = os::measure_clock_name(os::measure_clock());
  j[key::kMinObjectBytes] = s.config.min_object;
  j[key::kStepsDetected] = d.complete_steps;
  j[key::kLastStepIndex] = d.step_index;
  j[key::kStepDetection] = d.explicit_marks ? "marked" : (d.locked ? "automatic" : "none");
  j[key::kStepPeriodEvents] = d.period;
  j[key::kStepRedetections] = d.relocks;
  j[key::kObjectsPerStep] = d.last_step_objects;
  j[key::kBytesPerStep] = d.last_step_bytes;
  j[key::kObjectsTracked] = c.objects_tracked.load();
  j[key::kBytesTracked] = c.bytes_tracked.load();
  j[key::kObjectsFreed] = c.objects_freed.load();
  j[key::kLiveObjectsAtExit] = c.live_objects.load();
  j[key::kLiveBytesAtExit] = c.live_bytes.load();
  j[key::kPeakObjectBytes] = c.peak_live_bytes.load();
  j[key::kAllocationEvents] = d.events;
  j[key::kStepSearchAdoptions] = s.steps.adoptions();
  j[key::kStepSearchDroppedEvents] = s.steps.dropped_events();
  j[key::kInplaceReallocs] = c.inplace_reallocs.load();
  j[key::kReallocRemaps] = realloc_remapped();
  j[key::kInvalidFrees] = c.invalid_frees.load();
  j[key::kHeapFullFallbacks] = c.heap_full_fallbacks.load();
  j[key::kExtentsCarved] = heap.extents_carved;
  j[key::kExtentsReused] = heap.extents_reused;
  j[key::kExtentsFromOtherPool] = heap.extents_from_other_pool;
  j[key::kExtentsTrimmed] = heap.extents_trimmed;
  j[key::kEmptyBirthBytesFast] = c.empty_birth_bytes[0].load();
  j[key::kEmptyBirthBytesSlow] = c.empty_birth_bytes[1].load();
  j[key::kExtentBytesCarved] = heap.carved_bytes;
  j[key::kHeapPeakResidentBytes] = heap.peak_resident_bytes;
  j[key::kHeapPeakResidentWithoutSlowCacheBytes] = heap.peak_resident_without_cache_of[place::kSlowPool];
  j[key::kCachedKeptBytes] = heap.cached_kept_bytes;
  j[key::kKeptDroppedBytes] = heap.kept_dropped_bytes;
  j[key::kKeptHandedOverBytes] = heap.kept_handed_over_bytes;
  j[key::kReservedBytes] = s.heap.reserved_bytes();
  j[key::kCallSiteCacheMisses] = s.sites.cache_misses();
  j[key::kDroppedLogMessages] = s.log.dropped();
}

void add_profiler(Json& j) {
  const ProfilerReport prof = profiler_report();
  j[key::kSampler] = prof.sampler.empty() ? std::string("none") : prof.sampler;
  j[key::kSamples] = prof.samples;
  j[key::kSamplerReason] = prof.sampler_reason;
  // PMU samplers: where the samples came from ("qemu-slowtier": the emulated PMU), what the ring lost.
  j[key::kSamplerSource] = prof.sampler_source.empty() ? Json(nullptr) : Json(prof.sampler_source);
  j[key::kSamplesLost] = prof.samples_lost;
  j[key::kSamplesOutsideObjects] = prof.samples_outside_objects;
  j[key::kProfileState] = prof.state;
  j[key::kProfiledSteps] = prof.profiled_steps;
  j[key::kProfileFirstStep] = prof.last_profile_first_step;
  j[key::kProfilesWritten] = prof.profiles_written;
  j[key::kProfileRestarts] = prof.profile_restarts;
  j[key::kProfiledStepsBegunOver] = prof.profiled_steps_begun_over;
  j[key::kProfiledStepsLeftOut] = prof.profiled_steps_left_out;
  j[key::kObjectEventsDropped] = prof.events_dropped;
  const auto software = [&prof](uint64_t value) { return prof.software_sampler ? Json(value) : Json(nullptr); };
  j[key::kSamplerFaultsRetried] = software(prof.software.faults_retried);
  j[key::kSamplerFaultsRepaired] = software(prof.software.faults_repaired);
  j[key::kSamplerFaultsChained] = software(prof.software.faults_chained);
  j[key::kSamplerMprotectFailures] = software(prof.software.mprotect_failures);
  j[key::kSamplerIoUnguarded] = software(prof.software.io_unguarded);
}

void add_placement(Json& j, const State& s) {
  const place::PlacerStats p = s.placer.stats();
  // No budget (unlimited, or a single node) is null, not a huge number.
  j[key::kFastBudgetBytes] = p.budget_bytes == ~uint64_t{0} ? Json(nullptr) : Json(p.budget_bytes);
  j[key::kPeakFastBytes] = p.peak_fast_bytes;
  j[key::kPeakSlowBytes] = p.peak_slow_bytes;
  j[key::kForcedSlowAllocations] = p.forced_slow_allocations;
  j[key::kPlannedSlowAllocations] = p.planned_slow_allocations;
  j[key::kFastParkedBytes] = p.fast_parked_bytes;
  // The budget's books at exit: what live objects hold in each tier (every byte a move reserved is given
  // back when it ends), and releases of more bytes than a pool held (0 unless the books are broken).
  j[key::kFastLiveBytesAtExit] = p.fast_live_bytes;
  j[key::kSlowLiveBytesAtExit] = p.slow_live_bytes;
  j[key::kPlacerReleaseErrors] = p.release_errors;
  j[key::kParkedFastReuses] = p.parked_reuses;
  j[key::kParkedFastTrimmedBytes] = p.parked_trimmed_bytes;
  j[key::kSlowTailsKeptBytes] = s.counters.slow_tails_kept_bytes.load();
  j[key::kSlowTailsDroppedBytes] = s.counters.slow_tails_dropped_bytes.load();
  j[key::kParkedTailsDroppedBytes] = s.counters.parked_tails_dropped_bytes.load();
  j[key::kParkedTailsKeptBytes] = s.counters.parked_tails_kept_bytes.load();
  j[key::kParkedTailsKept] = !s.drop_parked_tails.load();
  j[key::kFastBirthsPopulatedBytes] = s.counters.fast_births_populated_bytes.load();
  j[key::kKeptBirthBytes] = s.counters.kept_birth_bytes.load();
  j[key::kFastTurnoverNs] = s.counters.fast_turnover_ns.load();
  const FaultCost paid = measured_turnover_cost();
  j[key::kFaultNsPerBytePaid] = paid.valid ? paid.ns_per_byte : 0.0;
  j[key::kBindFailures] = p.bind_failures;
  // Refused binds: rebinds that moved the pages instead, objects counted where their pages are, and of
  // those the ones counted fast beyond the budget.
  j[key::kRebindsMoving] = p.rebinds_moving;
  j[key::kBindsRehomed] = p.binds_rehomed;
  j[key::kBindsOverBudget] = p.binds_over_budget;
  const MigrationReport mig = migration_report();
  j[key::kMigrationEnabled] = mig.enabled;
  j[key::kMigrationsDone] = mig.engine.moves_done;
  j[key::kMigrationsFailed] = mig.engine.moves_failed;
  j[key::kMigrationsRefusedBudget] = mig.refused_budget;
  j[key::kMigrationsRefusedTail] = mig.refused_tail;
  j[key::kMigrationsCancelled] = mig.engine.cancelled_queued + mig.engine.cancelled_running;
  j[key::kMigrationQueueFull] = mig.engine.queue_full;
  j[key::kObjectsToSlow] = mig.engine.objects_to_slow;
  j[key::kBytesToSlow] = mig.engine.bytes_to_slow;
  j[key::kObjectsToFast] = mig.engine.objects_to_fast;
  j[key::kBytesToFast] = mig.engine.bytes_to_fast;
  j[key::kMigrationPagesBusy] = mig.engine.pages_busy;
  j[key::kMigrationPagesNomem] = mig.engine.pages_nomem;
  j[key::kMigrationRollbacks] = mig.engine.rollbacks;
  j[key::kMigrationSeconds] = static_cast<double>(mig.engine.move_ns) / 1e9;
  j[key::kFreesDuringMigration] = mig.deferred_frees;
  j[key::kPartialMovesCountedFast] = mig.partial_moves_counted_fast;
  j[key::kMigrationStaleCompletions] = mig.stale_completions;
  j[key::kFastNode] = s.placer.enabled() ? s.placer.fast_node() : -1;
  j[key::kSlowNode] = s.placer.enabled() ? s.placer.slow_node() : -1;
  j[key::kTopology] = std::string(s.topology);
  j[key::kDryRun] = s.config.dry_run;
  if (s.config.dry_run) {
    const os::DryRunCounts d = os::dry_run_counts();
    j[key::kDryRunPagesToSlow] = d.pages_to_simulated;
    j[key::kDryRunPagesFromSlow] = d.pages_from_simulated;
    j[key::kDryRunPagesOnSlowAtExit] = d.pages_on_simulated;
    j[key::kDryRunChannelSeconds] = static_cast<double>(d.paced_ns) / 1e9;
  }
  // The host budget shared with the job's other ranks (docs/distributed.md), null when not shared.
  j[key::kHostLedger] = p.host_ledger ? Json(std::string(s.ledger_path)) : Json(nullptr);
  j[key::kHostBudgetBytes] = p.host_ledger ? Json(p.host_budget_bytes) : Json(nullptr);
  j[key::kPeakHostFastBytes] = p.peak_host_fast_bytes;
  j[key::kHostRanksAtExit] = p.host_ranks;
}

void add_managed(Json& j, const State& s) {
  const ManagerReport m = manager_report();
  j[key::kManagedStage] = m.stage;
  j[key::kTier] = std::string(s.config.tier);
  j[key::kPlanSource] = m.plan_source;
  j[key::kProfileSource] = m.profile_source;
  j[key::kPlansFromLocalRank0Profile] = m.plans_from_leader;
  j[key::kFirstManagedStep] = m.first_managed_step;
  j[key::kLastPlanFirstStep] = m.last_plan_first_step;
  const manage::ExecutorStats& x = m.executor;
  j[key::kManagedSteps] = x.managed_steps;
  j[key::kFallbackSteps] = x.fallback_steps;
  j[key::kPlanDeviations] = s.counters.plan_deviations.load();
  j[key::kPlannedFastForcedSlow] = s.counters.planned_fast_forced_slow.load();
  j[key::kUnplannedBirths] = s.counters.unplanned_births.load();
  j[key::kUnplannedFastBytes] = s.counters.unplanned_fast_bytes.load();
  j[key::kMigrationBwPlannedGbps] = m.migration_bw_gbps;
  j[key::kMigrationSetupPlannedNs] = m.migration_setup_ns;
  j[key::kFaultNsPerBytePlanned] = m.fault_ns_per_byte;
  j[key::kPlanFreshBytesPerStep] = m.plan_fresh_bytes_per_step;
  j[key::kPlanFidelity] = x.fidelity();
  j[key::kLatePrefetches] = x.late_prefetches;
  j[key::kReplans] = m.replans;
  j[key::kPlans] = m.plans;
  j[key::kReprofiles] = m.reprofiles;
  j[key::kReprofilesDeferred] = m.reprofiles_deferred;
  j[key::kReprofilingStopped] = m.reprofiling_stopped;
  j[key::kPlanBudgetBytes] = m.plan_budget_bytes;
  j[key::kPlanModeledStepNs] = m.plan_modeled_step_ns;
  j[key::kPlannedBytesPerStep] = m.planned_bytes_per_step;
  j[key::kBytesMigratedPerStep] =
      x.managed_steps == 0 ? 0.0 : static_cast<double>(x.bytes_migrated) / static_cast<double>(x.managed_steps);
  j[key::kManagedBytesMigrated] = x.bytes_migrated;
  j[key::kManagedMovesIssued] = x.moves_issued;
  j[key::kManagedMovesDone] = x.moves_done;
  j[key::kManagedMovesFailed] = x.moves_failed;
  j[key::kManagedMovesDeferred] = x.moves_deferred;
  j[key::kManagedMovesDropped] = x.moves_dropped;
  j[key::kManagedReconcileMoves] = x.reconcile_moves;
  j[key::kManagedReconcilePrefetchesSkipped] = x.reconcile_prefetches_skipped;
  j[key::kMoveCompletionsDropped] = m.completions_dropped;
  j[key::kPlacementCheckedBytes] = m.placement_checked_bytes;
  j[key::kPlacementMatchingBytes] = m.placement_matching_bytes;
}

}  // namespace

bool write_stats_json(const char* path, std::string* error) noexcept {
  try {
    const State& s = g_state;
    Json j;
    j[key::kVersion] = 1;
    j[key::kMode] = mode_name(s.config.mode);
    add_run(j, s);
    if (s.config.mode == Mode::kProfile || s.config.mode == Mode::kManaged) add_profiler(j);
    add_placement(j, s);
    if (s.config.mode == Mode::kManaged) add_managed(j, s);
    const Status written = write_file_replacing(path, j.dump(2) + "\n");
    if (!written.is_ok() && error != nullptr) *error = written.message();
    return written.is_ok();
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

bool write_event_trace(const char* path, std::string* error) noexcept {
  try {
    std::string text = "# sentinel allocation-event trace: site live_objects live_bytes size small_before\n";
    g_state.steps.for_each_searched_event([&text](uint64_t site, uint32_t objects, uint64_t bytes, uint64_t size,
                                            uint32_t small_before) {
      char line[112];
      std::snprintf(line, sizeof line, "%016llx %u %llu %llu %u\n", static_cast<unsigned long long>(site), objects,
                    static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(size), small_before);
      text += line;
    });
    const Status written = write_file_replacing(path, text);
    if (!written.is_ok() && error != nullptr) *error = written.message();
    return written.is_ok();
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

}  // namespace sentinel::rt
