// The keys of the stats file (SENTINEL_STATS): written by the preload (preload/stats_json.cc) and read by
// `sentinel run`'s summary (tools/sentinel/stats_summary.cc), both through nlohmann::json and these names,
// so that a key renamed on one side cannot silently read as 0 on the other. kAll lists every key the
// file may hold, in the order the preload writes them.
//
// Thread safety: constants.
#pragma once

#include <array>
#include <string_view>

namespace sentinel::stats_key {

inline constexpr const char kPid[] = "pid";
inline constexpr const char kRuntimeSeconds[] = "runtime_seconds";
inline constexpr const char kMeasureClock[] = "measure_clock";
inline constexpr const char kMinObjectBytes[] = "min_object_bytes";
inline constexpr const char kStepsDetected[] = "steps_detected";
inline constexpr const char kLastStepIndex[] = "last_step_index";
inline constexpr const char kStepDetection[] = "step_detection";
inline constexpr const char kStepPeriodEvents[] = "step_period_events";
inline constexpr const char kStepRedetections[] = "step_redetections";
inline constexpr const char kObjectsPerStep[] = "objects_per_step";
inline constexpr const char kBytesPerStep[] = "bytes_per_step";
inline constexpr const char kObjectsTracked[] = "objects_tracked";
inline constexpr const char kBytesTracked[] = "bytes_tracked";
inline constexpr const char kObjectsFreed[] = "objects_freed";
inline constexpr const char kLiveObjectsAtExit[] = "live_objects_at_exit";
inline constexpr const char kLiveBytesAtExit[] = "live_bytes_at_exit";
inline constexpr const char kPeakObjectBytes[] = "peak_object_bytes";
inline constexpr const char kAllocationEvents[] = "allocation_events";
inline constexpr const char kStepSearchAdoptions[] = "step_search_adoptions";
inline constexpr const char kStepSearchDroppedEvents[] = "step_search_dropped_events";
inline constexpr const char kInplaceReallocs[] = "inplace_reallocs";
inline constexpr const char kReallocRemaps[] = "realloc_remaps";
inline constexpr const char kInvalidFrees[] = "invalid_frees";
inline constexpr const char kHeapFullFallbacks[] = "heap_full_fallbacks";
inline constexpr const char kExtentsCarved[] = "extents_carved";
inline constexpr const char kExtentsReused[] = "extents_reused";
inline constexpr const char kExtentsFromOtherPool[] = "extents_from_other_pool";
inline constexpr const char kExtentsTrimmed[] = "extents_trimmed";
// Transfers (docs/placement.md): cached extents whose pages went to a new extent, their bytes, the mremap
// calls that moved them, and sources whose pages did not all arrive (the rest were dropped).
// Extent bytes of objects born into extents without resident pages (the kernel faults them in), per pool.
inline constexpr const char kEmptyBirthBytesFast[] = "empty_birth_bytes_fast";
inline constexpr const char kEmptyBirthBytesSlow[] = "empty_birth_bytes_slow";
inline constexpr const char kExtentsTransferred[] = "extents_transferred";
inline constexpr const char kTransferredBytes[] = "transferred_bytes";
inline constexpr const char kTransferCalls[] = "transfer_calls";
inline constexpr const char kTransferFailures[] = "transfer_failures";
inline constexpr const char kExtentBytesCarved[] = "extent_bytes_carved";
inline constexpr const char kHeapPeakResidentBytes[] = "heap_peak_resident_bytes";
// The same leaving out the slow pool's cached extents (managed mode: on a tiered machine they are on the slow
// node; in a dry run they share the one node): what the program's live objects and the fast pool's cache held.
inline constexpr const char kHeapPeakResidentWithoutSlowCacheBytes[] = "heap_peak_resident_without_slow_cache_bytes";
inline constexpr const char kReservedBytes[] = "reserved_bytes";
inline constexpr const char kCallSiteCacheMisses[] = "call_site_cache_misses";
inline constexpr const char kDroppedLogMessages[] = "dropped_log_messages";
inline constexpr const char kSampler[] = "sampler";
inline constexpr const char kSamples[] = "samples";
inline constexpr const char kSamplerReason[] = "sampler_reason";
inline constexpr const char kSamplerSource[] = "sampler_source";
inline constexpr const char kSamplesLost[] = "samples_lost";
inline constexpr const char kSamplesOutsideObjects[] = "samples_outside_objects";
inline constexpr const char kProfileState[] = "profile_state";
inline constexpr const char kProfiledSteps[] = "profiled_steps";
inline constexpr const char kProfileFirstStep[] = "profile_first_step";  // of the last profile taken
inline constexpr const char kProfilesWritten[] = "profiles_written";
inline constexpr const char kProfileRestarts[] = "profile_restarts";
// Profiled steps the step detector began over (an evaluation pass taken for the step's start): the births
// before were dropped from the profile (preload/profiler.cc).
inline constexpr const char kProfiledStepsBegunOver[] = "profiled_steps_begun_over";
// Profiled steps that allocated other objects than the first (an evaluation pass, a checkpoint) and were
// left out of the profile, the next step profiled in their place.
inline constexpr const char kProfiledStepsLeftOut[] = "profiled_steps_left_out";
inline constexpr const char kObjectEventsDropped[] = "object_events_dropped";
// The software sampler's fault handling since its last start (it keeps SIGSEGV after a profile ends):
// faults it could not attribute and let run again once (a window just restored, or the program's own fault
// before it reaches the program), faults handed to the program's disposition, mprotect calls refused, and
// I/O calls made while every I/O guard was taken (preload/io_calls.h). null without a software sampler.
inline constexpr const char kSamplerFaultsRetried[] = "sampler_faults_retried";
// Pages the sampler had protected that a window's restore left protected (a lost restore): made
// accessible by the handler instead of killing the program.
inline constexpr const char kSamplerFaultsRepaired[] = "sampler_faults_repaired";
inline constexpr const char kSamplerFaultsChained[] = "sampler_faults_chained";
inline constexpr const char kSamplerMprotectFailures[] = "sampler_mprotect_failures";
inline constexpr const char kSamplerIoUnguarded[] = "sampler_io_unguarded";
inline constexpr const char kFastBudgetBytes[] = "fast_budget_bytes";
inline constexpr const char kPeakFastBytes[] = "peak_fast_bytes";
inline constexpr const char kPeakSlowBytes[] = "peak_slow_bytes";
inline constexpr const char kForcedSlowAllocations[] = "forced_slow_allocations";
inline constexpr const char kPlannedSlowAllocations[] = "planned_slow_allocations";
inline constexpr const char kFastParkedBytes[] = "fast_parked_bytes";
inline constexpr const char kFastLiveBytesAtExit[] = "fast_live_bytes_at_exit";
inline constexpr const char kSlowLiveBytesAtExit[] = "slow_live_bytes_at_exit";
inline constexpr const char kPlacerReleaseErrors[] = "placer_release_errors";
inline constexpr const char kParkedFastReuses[] = "parked_fast_reuses";
inline constexpr const char kParkedFastTrimmedBytes[] = "parked_fast_trimmed_bytes";
// Cached slow extents of a larger class taken by a smaller birth under a budget: their pages past its
// class, kept (preload/runtime.cc, place_extent), and dropped when such an object was moved to the fast
// node (preload/migration.cc, on_move_starting).
inline constexpr const char kSlowTailsKeptBytes[] = "slow_tails_kept_bytes";
inline constexpr const char kSlowTailsDroppedBytes[] = "slow_tails_dropped_bytes";
// The same for parked fast extents, which keep those pages until the budget first turns a planned-fast birth
// away (parked_tails_kept: still keeping them at exit).
inline constexpr const char kParkedTailsDroppedBytes[] = "parked_tails_dropped_bytes";
inline constexpr const char kParkedTailsKeptBytes[] = "parked_tails_kept_bytes";
inline constexpr const char kParkedTailsKept[] = "parked_tails_kept";
// Fast births under a budget whose pages were faulted in with one call (preload/runtime.cc, populate_birth).
inline constexpr const char kFastBirthsPopulatedBytes[] = "fast_births_populated_bytes";
// Dry runs: births into extents whose pages the books returned (for room, or as another pool's, on another
// node) and the dry run kept (their faults are booked, in empty_birth_bytes_*), the kept pages cached at exit,
// and kept pages returned for real over the heap's resident limit (core/object_heap.h).
inline constexpr const char kKeptBirthBytes[] = "kept_birth_bytes";
inline constexpr const char kCachedKeptBytes[] = "cached_kept_bytes";
inline constexpr const char kKeptDroppedBytes[] = "kept_dropped_bytes";
// Kept pages moved (mremap) into an extent of a smaller class that would have faulted its own in
// (core/object_heap.h, hand_over).
inline constexpr const char kKeptHandedOverBytes[] = "kept_handed_over_bytes";
// Time the program's threads spent dropping parked fast pages and faulting fast births in (runtime.cc).
inline constexpr const char kFastTurnoverNs[] = "fast_turnover_ns";
inline constexpr const char kBindFailures[] = "bind_failures";
inline constexpr const char kRebindsMoving[] = "rebinds_moving";
inline constexpr const char kBindsRehomed[] = "binds_rehomed";
inline constexpr const char kBindsOverBudget[] = "binds_over_budget";
inline constexpr const char kMigrationEnabled[] = "migration_enabled";
inline constexpr const char kMigrationsDone[] = "migrations_done";
inline constexpr const char kMigrationsFailed[] = "migrations_failed";
inline constexpr const char kMigrationsRefusedBudget[] = "migrations_refused_budget";
// Moves to the fast node refused because the kernel would not drop the slow object's tail first.
inline constexpr const char kMigrationsRefusedTail[] = "migrations_refused_tail";
inline constexpr const char kMigrationsCancelled[] = "migrations_cancelled";
inline constexpr const char kMigrationQueueFull[] = "migration_queue_full";
inline constexpr const char kObjectsToSlow[] = "objects_to_slow";
inline constexpr const char kBytesToSlow[] = "bytes_to_slow";
inline constexpr const char kObjectsToFast[] = "objects_to_fast";
inline constexpr const char kBytesToFast[] = "bytes_to_fast";
inline constexpr const char kMigrationPagesBusy[] = "migration_pages_busy";
inline constexpr const char kMigrationPagesNomem[] = "migration_pages_nomem";
inline constexpr const char kMigrationRollbacks[] = "migration_rollbacks";
inline constexpr const char kMigrationSeconds[] = "migration_seconds";
inline constexpr const char kFreesDuringMigration[] = "frees_during_migration";
inline constexpr const char kMigrationStaleCompletions[] = "migration_stale_completions";
inline constexpr const char kPartialMovesCountedFast[] = "partial_moves_counted_fast";
inline constexpr const char kFastNode[] = "fast_node";
inline constexpr const char kSlowNode[] = "slow_node";
inline constexpr const char kTopology[] = "topology";
// SENTINEL_DRY_RUN (os/dry_run.h): the slow node is simulated and its placement booked.
inline constexpr const char kDryRun[] = "dry_run";
inline constexpr const char kDryRunPagesToSlow[] = "dry_run_pages_to_slow";
inline constexpr const char kDryRunPagesFromSlow[] = "dry_run_pages_from_slow";
inline constexpr const char kDryRunPagesOnSlowAtExit[] = "dry_run_pages_on_slow_at_exit";
inline constexpr const char kDryRunChannelSeconds[] = "dry_run_channel_seconds";
// The tier model managed mode planned for (SENTINEL_TIER), so that `sentinel report` replays with it.
inline constexpr const char kTier[] = "tier";
inline constexpr const char kManagedStage[] = "managed_stage";
inline constexpr const char kPlanSource[] = "plan_source";
inline constexpr const char kFirstManagedStep[] = "first_managed_step";
// The step from which the plan in force at exit (the last replan's) was in force.
inline constexpr const char kLastPlanFirstStep[] = "last_plan_first_step";
inline constexpr const char kManagedSteps[] = "managed_steps";
inline constexpr const char kFallbackSteps[] = "fallback_steps";
inline constexpr const char kPlanDeviations[] = "plan_deviations";
inline constexpr const char kPlannedFastForcedSlow[] = "planned_fast_forced_slow";
// Births in managed steps whose tag the plan does not know (first-touch within the budget), and the bytes of
// those the budget let onto the fast node.
inline constexpr const char kUnplannedBirths[] = "unplanned_births";
inline constexpr const char kUnplannedFastBytes[] = "unplanned_fast_bytes";
inline constexpr const char kMigrationBwPlannedGbps[] = "migration_bw_planned_gbps";
inline constexpr const char kMigrationSetupPlannedNs[] = "migration_setup_planned_ns";
// What the plans assume recycling a fast page costs, per byte (preload/fault_cost.h), and the fast births'
// bytes the plan in force is modeled to fault in per step (plan/cost_model.h, the fast pool).
inline constexpr const char kFaultNsPerBytePlanned[] = "fault_ns_per_byte_planned";
// The same cost as the process paid it (preload/fault_cost.h, measured_turnover_cost); 0 before enough bytes.
inline constexpr const char kFaultNsPerBytePaid[] = "fault_ns_per_byte_paid";
inline constexpr const char kPlanFreshBytesPerStep[] = "plan_fresh_bytes_per_step";
inline constexpr const char kPlanFidelity[] = "plan_fidelity";
inline constexpr const char kLatePrefetches[] = "late_prefetches";
inline constexpr const char kReplans[] = "replans";
inline constexpr const char kPlans[] = "plans";
inline constexpr const char kReprofiles[] = "reprofiles";
inline constexpr const char kReprofilesDeferred[] = "reprofiles_deferred";
inline constexpr const char kReprofilingStopped[] = "reprofiling_stopped";
inline constexpr const char kPlanBudgetBytes[] = "plan_budget_bytes";
inline constexpr const char kPlanModeledStepNs[] = "plan_modeled_step_ns";
inline constexpr const char kPlannedBytesPerStep[] = "planned_bytes_per_step";
inline constexpr const char kBytesMigratedPerStep[] = "bytes_migrated_per_step";
inline constexpr const char kManagedBytesMigrated[] = "managed_bytes_migrated";
inline constexpr const char kManagedMovesIssued[] = "managed_moves_issued";
inline constexpr const char kManagedMovesDone[] = "managed_moves_done";
inline constexpr const char kManagedMovesFailed[] = "managed_moves_failed";
inline constexpr const char kManagedMovesDeferred[] = "managed_moves_deferred";
inline constexpr const char kManagedMovesDropped[] = "managed_moves_dropped";
inline constexpr const char kManagedReconcileMoves[] = "managed_reconcile_moves";
inline constexpr const char kManagedReconcilePrefetchesSkipped[] = "managed_reconcile_prefetches_skipped";
inline constexpr const char kMoveCompletionsDropped[] = "move_completions_dropped";
inline constexpr const char kPlacementCheckedBytes[] = "placement_checked_bytes";
inline constexpr const char kPlacementMatchingBytes[] = "placement_matching_bytes";
inline constexpr const char kVersion[] = "version";
// Many processes (docs/distributed.md).
inline constexpr const char kRank[] = "rank";
inline constexpr const char kForkedChildren[] = "forked_children";
inline constexpr const char kHostLedger[] = "host_ledger";
inline constexpr const char kHostBudgetBytes[] = "host_budget_bytes";
inline constexpr const char kPeakHostFastBytes[] = "peak_host_fast_bytes";
inline constexpr const char kHostRanksAtExit[] = "host_ranks_at_exit";
inline constexpr const char kProfileSource[] = "profile_source";
inline constexpr const char kPlansFromLocalRank0Profile[] = "plans_from_local_rank0_profile";
inline constexpr const char kMode[] = "mode";

inline constexpr std::array<std::string_view, 154> kAll = {
    kPid,
    kRank,
    kForkedChildren,
    kRuntimeSeconds,
    kMeasureClock,
    kMinObjectBytes,
    kStepsDetected,
    kLastStepIndex,
    kStepDetection,
    kStepPeriodEvents,
    kStepRedetections,
    kObjectsPerStep,
    kBytesPerStep,
    kObjectsTracked,
    kBytesTracked,
    kObjectsFreed,
    kLiveObjectsAtExit,
    kLiveBytesAtExit,
    kPeakObjectBytes,
    kAllocationEvents,
    kStepSearchAdoptions,
    kStepSearchDroppedEvents,
    kInplaceReallocs,
    kReallocRemaps,
    kInvalidFrees,
    kHeapFullFallbacks,
    kExtentsCarved,
    kExtentsReused,
    kExtentsFromOtherPool,
    kExtentsTrimmed,
    kEmptyBirthBytesFast,
    kEmptyBirthBytesSlow,
    kExtentBytesCarved,
    kHeapPeakResidentBytes,
    kHeapPeakResidentWithoutSlowCacheBytes,
    kReservedBytes,
    kCallSiteCacheMisses,
    kDroppedLogMessages,
    kSampler,
    kSamples,
    kSamplerReason,
    kSamplerSource,
    kSamplesLost,
    kSamplesOutsideObjects,
    kProfileState,
    kProfiledSteps,
    kProfileFirstStep,
    kProfilesWritten,
    kProfileRestarts,
    kProfiledStepsBegunOver,
    kProfiledStepsLeftOut,
    kObjectEventsDropped,
    kSamplerFaultsRetried,
    kSamplerFaultsRepaired,
    kSamplerFaultsChained,
    kSamplerMprotectFailures,
    kSamplerIoUnguarded,
    kFastBudgetBytes,
    kPeakFastBytes,
    kPeakSlowBytes,
    kForcedSlowAllocations,
    kPlannedSlowAllocations,
    kFastParkedBytes,
    kFastLiveBytesAtExit,
    kSlowLiveBytesAtExit,
    kPlacerReleaseErrors,
    kParkedFastReuses,
    kParkedFastTrimmedBytes,
    kSlowTailsKeptBytes,
    kSlowTailsDroppedBytes,
    kParkedTailsDroppedBytes,
    kParkedTailsKeptBytes,
    kParkedTailsKept,
    kFastBirthsPopulatedBytes,
    kKeptBirthBytes,
    kCachedKeptBytes,
    kKeptDroppedBytes,
    kKeptHandedOverBytes,
    kFastTurnoverNs,
    kBindFailures,
    kRebindsMoving,
    kBindsRehomed,
    kBindsOverBudget,
    kMigrationEnabled,
    kMigrationsDone,
    kMigrationsFailed,
    kMigrationsRefusedBudget,
    kMigrationsRefusedTail,
    kMigrationsCancelled,
    kMigrationQueueFull,
    kObjectsToSlow,
    kBytesToSlow,
    kObjectsToFast,
    kBytesToFast,
    kMigrationPagesBusy,
    kMigrationPagesNomem,
    kMigrationRollbacks,
    kMigrationSeconds,
    kFreesDuringMigration,
    kPartialMovesCountedFast,
    kMigrationStaleCompletions,
    kFastNode,
    kSlowNode,
    kTopology,
    kDryRun,
    kDryRunPagesToSlow,
    kDryRunPagesFromSlow,
    kDryRunPagesOnSlowAtExit,
    kDryRunChannelSeconds,
    kHostLedger,
    kHostBudgetBytes,
    kPeakHostFastBytes,
    kHostRanksAtExit,
    kManagedStage,
    kTier,
    kPlanSource,
    kProfileSource,
    kPlansFromLocalRank0Profile,
    kFirstManagedStep,
    kLastPlanFirstStep,
    kManagedSteps,
    kFallbackSteps,
    kPlanDeviations,
    kPlannedFastForcedSlow,
    kUnplannedBirths,
    kUnplannedFastBytes,
    kMigrationBwPlannedGbps,
    kFaultNsPerBytePlanned,
    kFaultNsPerBytePaid,
    kPlanFreshBytesPerStep,
    kPlanFidelity,
    kLatePrefetches,
    kReplans,
    kPlans,
    kReprofiles,
    kReprofilesDeferred,
    kReprofilingStopped,
    kPlanBudgetBytes,
    kPlanModeledStepNs,
    kPlannedBytesPerStep,
    kBytesMigratedPerStep,
    kManagedBytesMigrated,
    kManagedMovesIssued,
    kManagedMovesDone,
    kManagedMovesFailed,
    kManagedMovesDeferred,
    kManagedMovesDropped,
    kManagedReconcileMoves,
    kManagedReconcilePrefetchesSkipped,
    kMoveCompletionsDropped,
    kPlacementCheckedBytes,
    kPlacementMatchingBytes,
    kVersion,
    kMode,
};

}  // namespace sentinel::stats_key
