// Managed mode: putting a plan in force (planned, or SENTINEL_PLAN compiled against the profile), adapting it
// after a managed step, dropping it. Caller holds g_manager_mu (manager_state.h).
#include <cstdio>
#include <string>

#include "logging.h"
#include "manager_state.h"
#include "plan/cost_model.h"
#include "profiler.h"
#include "runtime_state.h"
#include "status_file.h"

namespace sentinel::rt::managed {
namespace {

// The profile the planner sees: object sizes as the extents the heap gives them, which is what the budget
// placer counts.
StepProfile in_extent_bytes(const StepProfile& p) {
  StepProfile q = p;
  for (ObjectProfile& o : q.objects) o.size = extent_of(o.size);
  return q;
}

// Makes `table` the birth table in force (null: none) and frees the one before. The allocation path reads
// the table only inside BirthGate::decide, under g_state.clock_lock, and keeps no pointer to it after; so
// once the lock has been taken after the publish, no thread can still be reading the old table. (Keeping
// every table ever published instead grew the runtime's memory by one table per re-plan or re-profile.)
void publish_births(Manager& m, std::unique_ptr<BirthTable> table) {
  g_state.births.publish(table.get());
  { SpinGuard readers_done(g_state.clock_lock); }
  m.table = std::move(table);
}

// How much slower (> 1) or faster (< 1) the engine's moves were than the plan's channel model
// predicts for the same moves, once they add up to enough to tell; 0 before. A channel off by more
// than kChannelOff either way (a loaded machine, an emulator, a preset far from this machine) is
// replanned with the setup and bandwidth fitted to the moves (channel_fit.h), or, when their sizes
// are too alike to tell the two apart, with both scaled by the slowdown.
constexpr double kChannelOff = 1.0 / 0.7;

double channel_slowdown_now(const Manager& m, migrate::ChannelTotals* totals) {
  constexpr double kEnoughKib = 1024;
  *totals = migration_report().engine.channel;
  if (totals->kib < kEnoughKib) return 0;
  return migrate::channel_slowdown(*totals, m.mem.migration_setup_ns, m.mem.migration_bw_gbps);
}

void adopt_measured_channel(Manager& m, const migrate::ChannelTotals& totals, double slowdown) {
  const migrate::ChannelFit fit = migrate::fit_channel(totals);
  if (fit.valid) {
    m.mem.migration_setup_ns = fit.setup_ns;
    m.mem.migration_bw_gbps = fit.bw_gbps;
  } else {
    m.mem.migration_setup_ns *= slowdown;
    m.mem.migration_bw_gbps /= slowdown;
  }
}

}  // namespace

// Makes the plan for the current profile (or compiles SENTINEL_PLAN against it) and puts it in force from
// the next step on. False when nothing could be planned (logged).
bool plan_and_start(Manager& m, const char* why) {
  // `sentinel run`'s status line says "planning" while the planner runs.
  status_stage_begin("planning");
  struct StageDone {
    ~StageDone() { status_stage_done(); }
  } stage_done;
  std::string error;
  if (m.profile->period < kMinPlanPeriod) {
    // Python's imports and other set-up loops repeat too: a "step" of one or two allocations has no
    // phases to place objects in. Wait for the real structure (the detector re-detects it).
    log_write(LogLevel::kInfo, ("managed mode: a step of " + std::to_string(m.profile->period) +
                                " allocation(s) is not planned; waiting for the training step")
                                   .c_str());
    m.stage = Stage::kProfiling;
    return false;
  }
  auto index = std::make_unique<ProfileIndex>();
  if (!index->build(in_extent_bytes(*m.profile), &error)) {
    log_write(LogLevel::kError, ("managed mode: the profile cannot be planned: " + error).c_str());
    return false;
  }
  Plan plan;
  auto compiled = std::make_shared<CompiledPlan>();
  bool have = false;
  if (m.given_plan && !m.given_plan_failed) {
    if (compiled->compile(*m.given_plan, *index, [](uint64_t s) { return s; }, &error)) {
      plan = *m.given_plan;
      m.plan_source = "SENTINEL_PLAN";
      have = true;
    } else {
      m.given_plan_failed = true;
      log_write(LogLevel::kWarn, ("SENTINEL_PLAN does not fit this program (" + error + "): planning instead").c_str());
    }
  }
  if (!have) {
    m.planner.budget_bytes = g_state.placer.budget_bytes();
    if (g_state.placer.shares_host_budget()) {
      // The host's ranks share the budget (docs/distributed.md): this rank plans for an equal part of it.
      const uint32_t ranks = g_state.ledger.live_slots();
      m.planner.budget_bytes = g_state.ledger.budget() / (ranks == 0 ? 1 : ranks);
    }
    if (m.planner.budget_bytes == ~uint64_t{0}) m.planner.budget_bytes = 0, m.planner.budget_fraction = 1.0;
    if (!plan_sentinel(*index, m.mem, m.planner, &plan, &error) ||
        !compiled->compile(plan, *index, [](uint64_t s) { return s; }, &error)) {
      log_write(LogLevel::kError, ("managed mode: planning failed: " + error).c_str());
      return false;
    }
    m.plan_source = "planned";
  }
  // What the plan costs in faults, by the model (fault_cost.h): compared with empty_birth_bytes_fast.
  SimOptions as_run;
  as_run.pool_bytes = plan.summary.budget_bytes;
  SimResult modeled;
  m.plan_fresh_bytes_per_step =
      as_run.pool_bytes > 0 && simulate_plan(*index, plan, m.mem, as_run, &modeled, nullptr) ? modeled.fresh_bytes : 0;
  const int64_t first = m.step + 1;
  auto table = std::make_unique<BirthTable>();
  table->build(*compiled, first);
  publish_births(m, std::move(table));
  if (m.timeline && m.plans == 0) m.timeline->header(plan.period, plan.policy, plan.summary.budget_bytes);
  m.executor->start(compiled, first);
  m.reprofile.plan_started(first);
  m.plan = std::move(plan);
  m.index = std::move(index);
  m.stage = Stage::kManaged;
  ++m.plans;
  if (m.first_managed_step < 0) m.first_managed_step = first;
  m.last_plan_first_step = first;
  log_write(LogLevel::kInfo,
            (std::string("managed mode: ") + why + ": " + m.plan_source + " plan in force from step " +
             std::to_string(first) + ", budget " + std::to_string(m.plan.summary.budget_bytes) + " B, " +
             std::to_string(m.plan.move_count()) + " moves per step, modeled step " +
             std::to_string(m.plan.summary.modeled_step_ns / 1e6) + " ms (" + m.mem.name + ")")
                .c_str());
  return true;
}

// Back to profiling: the plan no longer describes the program.
void drop_plan(Manager& m, const char* why) {
  publish_births(m, nullptr);
  m.executor->stop();
  m.stage = Stage::kProfiling;
  m.replan_saturated = false;
  m.planner.extra_lookahead_phases.clear();
  m.late_lookahead.clear();
  ++m.reprofiles;
  profiler_request_profile();
  log_write(LogLevel::kInfo, (std::string("managed mode: ") + why + ": profiling again").c_str());
}

// Once: the program's steps do not repeat exactly (variable sequence lengths, say), so profiling again
// would cost more than it earns; the last plan stays in force for the steps that follow it.
void log_reprofiling_stopped(Manager& m) {
  log_write(LogLevel::kWarn,
            ("managed mode: " + std::to_string(m.reprofile.unheld_plans()) +
             " plans in a row were left by the program's steps before they held (its steps do not repeat "
             "exactly): no more profiling; the last plan stays in force for the steps that follow it, the "
             "others run first-touch under the budget")
                .c_str());
}

// After a managed step: prefetches late in it and in the step before are planned earlier
// (manage/late_lookahead.h), in bounded rounds, until none is late or the plan stops changing; a
// migration channel far from the tier model's is planned as measured.
void adapt_plan(Manager& m) {
  const std::vector<uint64_t> late = m.late_lookahead.repeated(m.executor->take_late_tags());
  if (m.replans >= g_state.config.replan_rounds || m.plan_source != "planned") return;
  migrate::ChannelTotals totals;
  const double slowdown = channel_slowdown_now(m, &totals);
  const bool channel_off = slowdown > kChannelOff || (slowdown > 0 && slowdown < 1.0 / kChannelOff);
  if (channel_off) adopt_measured_channel(m, totals, slowdown);
  if (!channel_off && (late.empty() || m.replan_saturated)) return;
  if (!channel_off && !m.late_lookahead.improves_on_last(late.size())) {
    m.replan_saturated = true;  // the last replan did not reduce them: this one would not either
    return;
  }
  manage::LateLookahead::raise(late, &m.planner.extra_lookahead_phases);
  Plan before = m.plan;
  ++m.replans;
  char measured[160];
  std::snprintf(measured, sizeof measured,
                "migration measured at %.2f GB/s + %.1f us per move (%.2fx the model's time, %.0f moves)",
                m.mem.migration_bw_gbps, m.mem.migration_setup_ns / 1e3, slowdown, totals.moves);
  const std::string why = channel_off ? std::string(measured)
                                      : "late prefetches (" + std::to_string(late.size()) + ")";
  if (!plan_and_start(m, why.c_str())) return;
  if (!channel_off && m.plan.events == before.events && m.plan.birth_tier == before.birth_tier) {
    m.replan_saturated = true;
  }
}

}  // namespace sentinel::rt::managed
