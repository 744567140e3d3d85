// Managed mode's state inside the program and the jobs that share it, one file per job:
//   manager.cc        the entry points (manager.h), the inputs read at start, the object events
//   manager_plan.cc   putting a plan in force, adapting it after a step, dropping it
//   manager_audit.cc  the placement audit (where the kernel really has the planned objects' pages)
//   manager_match.cc  matching a given profile (SENTINEL_PROFILE_IN, LOCAL_RANK 0's) against the steps
//   manager_share.cc  sharing the profile between a host's ranks (profile once, docs/distributed.md)
//   manager_report.cc the snapshot manager_report() gives other threads
//
// Thread safety: one Manager, *g_manager, created by the first entry point that needs it. Everything in it
// is guarded by g_manager_mu: the service thread holds it for each event, tick and quiet-events question,
// the exit path for the last drain, manager_report() (any thread) for its snapshot. The functions declared
// here expect the caller to hold it. g_completions needs no lock: one producer (the migration engine's
// thread), one consumer (whoever holds g_manager_mu).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/bounded_ring.h"
#include "core/event_ring.h"
#include "core/output_file.h"
#include "manage/birth_table.h"
#include "manage/compiled_plan.h"
#include "manage/plan_executor.h"
#include "manage/profile_match.h"
#include "manage/late_lookahead.h"
#include "manage/reprofile_policy.h"
#include "manage/timeline_writer.h"
#include "migration.h"
#include "plan/planner.h"
#include "service.h"
#include "vocabulary.h"

namespace sentinel::rt::managed {

using manage::BirthTable;
using manage::CompiledPlan;
using manage::ObjectRef;
using manage::PlanExecutor;

// Moves that ended, from the engine thread to the service thread (one producer, one consumer).
struct Completion {
  uint32_t slot;
  uint32_t generation;
  uint8_t to_pool;
  bool moved;
  bool refused;  // refused when it was to start (no room): the executor lets it wait again
  uint64_t time_ns;
};
using CompletionRing = BoundedRing<Completion, 1u << 14>;

inline uint64_t extent_of(uint64_t size) { return place::extent_bytes_for(size); }

// Moves requested by the executor go to the migration engine; the budget placer refuses those that do not
// fit (migration_move_slot counts an object in flight on both tiers).
class EngineSink final : public manage::MoveSink {
 public:
  bool request_move(ObjectRef ref, uint64_t, Tier to) override {
    return migration_move_slot(ref.slot, ref.generation, pool_of(to), kMovePriority).valid();
  }
};

// A Manager's stage; before one exists (managed mode off, or no event yet) manager_report() says "off" or
// "profiling" itself.
enum class Stage { kProfiling, kWaitingForProfile, kMatchingProfile, kManaged };
const char* stage_name(Stage s);

constexpr uint32_t kDeviationsLogged = 5;
// Steps shorter than this are set-up loops: not planned, and waited out by the profile matcher (the one number).
constexpr uint32_t kMinPlanPeriod = manage::ProfileMatcher::kSetUpPeriod;

struct Manager {
  MemorySystem mem;
  PlannerConfig planner;
  EngineSink sink;
  OutputFileStream timeline_file;  // renamed into place at exit (core/output_file.h)
  std::unique_ptr<manage::TimelineWriter> timeline;
  std::unique_ptr<PlanExecutor> executor;
  Stage stage = Stage::kProfiling;

  std::shared_ptr<const StepProfile> profile;  // what the current plan was made from
  std::unique_ptr<ProfileIndex> index;
  uint64_t profiles_taken = 0;
  std::unique_ptr<Plan> given_plan;            // SENTINEL_PLAN
  bool given_plan_failed = false;
  std::string plan_source;
  Plan plan;
  std::unique_ptr<BirthTable> table;  // the one published (g_state.births), null while none is

  // Matching SENTINEL_PROFILE_IN (or LOCAL_RANK 0's profile) against the running program.
  std::shared_ptr<const StepProfile> candidate;
  std::unique_ptr<manage::ProfileMatcher> matcher;  // of the candidate
  std::string profile_source = "own";    // "own", "SENTINEL_PROFILE_IN", "LOCAL_RANK 0"
  uint64_t wait_until_ns = 0;            // a follower rank gives up waiting for the shared profile then
  bool shared_profile_published = false;
  uint64_t plans_from_leader = 0;  // plans made from LOCAL_RANK 0's profile

  int64_t step = -1;
  uint64_t relocks = ~uint64_t{0};
  uint64_t fallbacks_seen = 0, managed_seen = 0;
  uint32_t deviations_logged = 0;
  manage::ReprofilePolicy reprofile;  // when a plan that steps keep leaving is dropped (reprofile_policy.h)
  bool replan_saturated = false;
  manage::LateLookahead late_lookahead;  // which late prefetches make a replan (late_lookahead.h)
  uint64_t replans = 0, plans = 0, reprofiles = 0;
  uint64_t managed_phases = 0;
  uint64_t checked_bytes = 0, matching_bytes = 0;
  int64_t first_managed_step = -1;
  int64_t last_plan_first_step = -1;
  uint64_t plan_fresh_bytes_per_step = 0;  // modeled for the plan in force (plan/cost_model.h's fast pool)
};

extern Manager* g_manager;
extern std::atomic<bool> g_manager_live;  // completions are wanted
extern CompletionRing g_completions;
extern std::mutex g_manager_mu;  // guards g_manager and all of *g_manager (see the header comment)

// manager_plan.cc
bool plan_and_start(Manager& m, const char* why);
void drop_plan(Manager& m, const char* why);
void adapt_plan(Manager& m);
void log_reprofiling_stopped(Manager& m);
// manager_audit.cc
void check_placement(Manager& m);
// manager_match.cc
// Makes `profile` the candidate to match; false with *error for a profile that cannot be indexed.
bool take_candidate(Manager& m, std::shared_ptr<const StepProfile> profile, std::string* error);
void match_profile(Manager& m, const ObjectEvent& e, LiveObjects& live);
// The executor takes the tags persistent objects were given of their own (service.h, name_persistent_twins).
void apply_twin_renames(Manager& m);
// manager_share.cc
void poll_shared_profile(Manager& m);
void publish_shared_profile(Manager& m);

}  // namespace sentinel::rt::managed
