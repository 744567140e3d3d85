// manager_report(): a snapshot of managed mode's state for the stats file, the status line and the API
// (any thread; takes g_manager_mu, manager_state.h).
#include "manager.h"
#include "manager_state.h"

namespace sentinel::rt {

using namespace managed;

ManagerReport manager_report() noexcept {
  ManagerReport r;
  try {
    std::lock_guard<std::mutex> lock(g_manager_mu);
    r.enabled = g_manager_live.load(std::memory_order_acquire);
    if (g_manager == nullptr) {
      r.stage = r.enabled ? "profiling" : "off";
      return r;
    }
    const Manager& m = *g_manager;
    const manage::ExecutorStats& st = m.executor->stats();
    r.stage = stage_name(m.stage);
    r.plan_source = m.plan_source;
    r.profile_source = m.profile_source;
    r.plans_from_leader = m.plans_from_leader;
    r.executor = st;
    r.replans = m.replans;
    r.plans = m.plans;
    r.reprofiles = m.reprofiles;
    r.reprofiling_stopped = m.reprofile.stopped();
    r.reprofiles_deferred = m.reprofile.drops_deferred();
    r.planned_bytes_per_step = m.executor->plan() ? m.executor->plan()->planned_migrated_bytes_per_step() : 0;
    r.plan_budget_bytes = m.plan.summary.budget_bytes;
    r.plan_modeled_step_ns = m.plan.summary.modeled_step_ns;
    r.completions_dropped = g_completions.dropped();
    r.placement_checked_bytes = m.checked_bytes;
    r.placement_matching_bytes = m.matching_bytes;
    r.first_managed_step = m.first_managed_step;
    r.last_plan_first_step = m.last_plan_first_step;
    r.migration_bw_gbps = m.mem.migration_bw_gbps;
    r.migration_setup_ns = m.mem.migration_setup_ns;
    r.fault_ns_per_byte = m.mem.fault_ns_per_byte;
    r.plan_fresh_bytes_per_step = m.plan_fresh_bytes_per_step;
  } catch (...) {
  }
  return r;
}

}  // namespace sentinel::rt
