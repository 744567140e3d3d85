#include "manager.h"

#include <numaif.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "core/bounded_ring.h"
#include "core/output_file.h"
#include "logging.h"
#include "os/measure_clock.h"
#include "os/os.h"
#include "os/resident.h"
#include "manage/birth_table.h"
#include "manage/compiled_plan.h"
#include "manage/plan_executor.h"
#include "manage/reprofile_policy.h"
#include "manage/timeline_writer.h"
#include "migration.h"
#include "plan/plan_io.h"
#include "plan/tag_text.h"
#include "plan/planner.h"
#include "profile/profile_builder.h"
#include "profile/profile_io.h"
#include "profiler.h"
#include "runtime.h"
#include "runtime_state.h"
#include "status_file.h"
#include "vocabulary.h"

namespace sentinel::rt {
namespace {

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
  uint64_t time_ns;
};
using CompletionRing = BoundedRing<Completion, 1u << 14>;

uint64_t extent_of(uint64_t size) { return place::extent_bytes_for(size); }

// Moves requested by the executor go to the migration engine; the budget placer refuses those that do not
// fit (migration_move_slot counts an object in flight on both tiers).
class EngineSink final : public manage::MoveSink {
 public:
  bool request_move(ObjectRef ref, uint64_t, Tier to) override {
    return migration_move_slot(ref.slot, ref.generation, pool_of(to), kMovePriority).valid();
  }
};

enum class Stage { kOff, kProfiling, kWaitingForProfile, kMatchingProfile, kManaged };
const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kOff: return "off";
    case Stage::kWaitingForProfile: return "waiting-for-profile";
    case Stage::kProfiling: return "profiling";
    case Stage::kMatchingProfile: return "matching-profile";
    case Stage::kManaged: return "managed";
  }
  return "?";
}

constexpr uint32_t kDeviationsLogged = 5;
constexpr uint32_t kMinPlanPeriod = 4;

std::string hex(uint64_t v) { return format_tag(v); }
constexpr double kProfileMatchShare = 0.9;

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

  // Matching SENTINEL_PROFILE_IN against the running program.
  std::shared_ptr<const StepProfile> candidate;
  std::vector<uint64_t> candidate_tags;  // expected tag per event
  std::string profile_source = "own";    // "own", "SENTINEL_PROFILE_IN", "LOCAL_RANK 0"
  uint64_t wait_until_ns = 0;            // a follower rank gives up waiting for the shared profile then
  bool shared_profile_published = false;
  uint64_t plans_from_leader = 0;  // plans made from LOCAL_RANK 0's profile
  int64_t match_step = -1;
  uint32_t match_events = 0, match_hits = 0;
  std::vector<uint64_t> match_seen;  // the matched step's tags, in the order they came

  int64_t step = -1;
  uint64_t relocks = ~uint64_t{0};
  uint64_t fallbacks_seen = 0, managed_seen = 0;
  uint32_t deviations_logged = 0;
  manage::ReprofilePolicy reprofile;  // when a plan that steps keep leaving is dropped (reprofile_policy.h)
  bool replan_saturated = false;
  uint64_t replans = 0, plans = 0, reprofiles = 0;
  uint64_t managed_phases = 0;
  uint64_t checked_bytes = 0, matching_bytes = 0;
  int64_t first_managed_step = -1;
};

Manager* g_manager = nullptr;
std::atomic<bool> g_manager_live{false};  // completions are wanted
CompletionRing g_completions;
std::mutex g_report_mu;  // manager state against manager_report() from other threads

void drain_completions(Manager& m, uint64_t until_ns) {
  Completion c;
  // Only moves that ended by `until_ns` (the time of the event being handled): the executor sees a move
  // end where it ended among the object events.
  while (g_completions.pop_if([until_ns](const Completion& next) { return next.time_ns <= until_ns; }, &c)) {
    m.executor->on_move_done(ObjectRef{c.slot, c.generation}, tier_of_pool(c.to_pool), c.moved);
  }
}

std::vector<uint64_t> expected_tags(const StepProfile& p) {
  std::vector<uint64_t> tags(p.period, 0);
  for (const ObjectProfile& o : p.objects) {
    if (!o.persistent && o.birth_phase < p.period) tags[o.birth_phase] = o.tag;
  }
  return tags;
}

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

// After a managed step: late prefetches are planned earlier, in bounded rounds, until none is late or the
// plan stops changing; a migration channel far from the tier model's is planned as measured.
void adapt_plan(Manager& m) {
  const std::vector<uint64_t> late = m.executor->take_late_tags();
  if (m.replans >= g_state.config.replan_rounds || m.plan_source != "planned") return;
  migrate::ChannelTotals totals;
  const double slowdown = channel_slowdown_now(m, &totals);
  const bool channel_off = slowdown > kChannelOff || (slowdown > 0 && slowdown < 1.0 / kChannelOff);
  if (channel_off) adopt_measured_channel(m, totals, slowdown);
  if (!channel_off && (late.empty() || m.replan_saturated)) return;
  for (uint64_t tag : late) ++m.planner.extra_lookahead_phases[tag];
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

// Where the kernel really has the pages of every live object the plan has an opinion on: a sample of pages
// per object, queried with move_pages (nodes = NULL). Objects with a move running or waiting are in transit
// and not counted.
void check_placement(Manager& m) {
  std::vector<void*> pages;
  std::vector<int> status;
  m.executor->for_each_live([&](ObjectRef ref, uint64_t tag, uint64_t bytes, Tier, bool moving) {
    // Settled objects only: one with a move running or waiting is in transit, by the plan's own schedule.
    Tier want;
    if (moving || m.executor->move_waiting(tag) || !m.executor->intended_tier(tag, &want) ||
        m.executor->plan()->object(tag) == nullptr) {
      return;
    }
    const ObjectRecord& r = g_state.heap.record(ref.slot);
    if (r.generation != ref.generation || r.state.load(std::memory_order_acquire) != ExtentState::kLive) return;
    constexpr uint64_t kSamples = 16;
    const uint64_t npages = bytes / kPageSize;
    pages.clear();
    for (uint64_t i = 0; i < kSamples && i < npages; ++i) {
      pages.push_back(reinterpret_cast<void*>(r.start + (i * npages / std::min(kSamples, npages)) * kPageSize));
    }
    status.assign(pages.size(), -1);
    if (pages.empty() || os::move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) return;
    const int want_node = g_state.placer.node_of_pool(pool_of(want));
    uint64_t present = 0, matching = 0;
    for (int st : status) {
      if (st < 0) continue;  // not touched yet: no page to be anywhere
      ++present;
      if (st == want_node) ++matching;
    }
    if (present == 0) return;
    m.checked_bytes += bytes;
    m.matching_bytes += bytes * matching / present;
  });
}

void on_alloc(Manager& m, const ObjectEvent& e) {
  drain_completions(m, e.time_ns);
  if (m.relocks != e.relocks) {
    const bool had_structure = m.relocks != ~uint64_t{0};
    m.relocks = e.relocks;
    if (had_structure && m.stage == Stage::kManaged) {
      if (m.reprofile.may_profile_after_structure_change()) {
        drop_plan(m, "the step structure changed");
      } else {
        log_reprofiling_stopped(m);
      }
    }
  }
  const bool new_step = e.step >= 0 && e.step != m.step;
  const bool was_deviated = m.executor->step_deviated();
  const uint64_t late_before = m.executor->stats().late_prefetches;
  m.executor->on_alloc(ObjectRef{e.slot, e.generation}, e.tag, e.extent_bytes, tier_of_pool(e.pool), e.step, e.event,
                       e.period);
  if (m.executor->stats().late_prefetches != late_before) {
    migration_note_late(m.executor->stats().late_prefetches - late_before);
  }
  if (!was_deviated && m.executor->step_deviated() && m.deviations_logged < kDeviationsLogged) {
    ++m.deviations_logged;
    const CompiledPlan* plan = m.executor->plan();
    log_write(LogLevel::kInfo, ("managed mode: step " + std::to_string(e.step) + " left the plan at event " +
                                std::to_string(e.event) + " (period " + std::to_string(e.period) + "; tag " +
                                hex(e.tag) + ", the plan expects " +
                                hex(plan && e.event < plan->period() ? plan->expected_tag(e.event) : 0) +
                                "): first-touch until the step ends")
                                   .c_str());
  }
  if (new_step) {
    // The executor has closed the step before this one: was it followed or did it fall back?
    m.step = e.step;
    const manage::ExecutorStats& st = m.executor->stats();
    const bool left = st.fallback_steps != m.fallbacks_seen, followed = st.managed_steps != m.managed_seen;
    m.fallbacks_seen = st.fallback_steps;
    m.managed_seen = st.managed_steps;
    if (m.stage == Stage::kManaged) {
      using Verdict = manage::ReprofilePolicy::Verdict;
      // A step the executor did not close as managed or fallback (no plan yet at its start) tells nothing.
      switch ((left || followed) ? m.reprofile.step_closed(e.step - 1, !left) : Verdict::kKeep) {
        case Verdict::kDrop: drop_plan(m, "three steps in a row left the plan"); break;
        case Verdict::kStopReprofiling: log_reprofiling_stopped(m); break;
        case Verdict::kKeep: adapt_plan(m); break;
      }
    }
  }
  if (m.stage == Stage::kManaged && m.executor->step_managed()) {
    ++m.managed_phases;
    const uint32_t every = g_state.config.placement_check;
    if (every > 0 && m.managed_phases % every == 0) check_placement(m);
  }
}

// How the log names the profile being matched.
std::string given_profile_name(const Manager& m) {
  return m.profile_source == "LOCAL_RANK 0" ? "LOCAL_RANK 0's profile" : "SENTINEL_PROFILE_IN";
}

// The share of `seen` tags that the expected tags contain, each expected tag counted once.
double any_order_share(const std::vector<uint64_t>& expected, const std::vector<uint64_t>& seen) {
  if (seen.empty()) return 0.0;
  std::unordered_multiset<uint64_t> left;
  for (uint64_t t : expected)
    if (t != 0) left.insert(t);
  size_t hits = 0;
  for (uint64_t t : seen) {
    auto it = left.find(t);
    if (it == left.end()) it = left.find(ProfileBuilder::derived_tag(t));
    if (it == left.end()) continue;
    left.erase(it);
    ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(seen.size());
}

// SENTINEL_PROFILE_IN: the first whole step after the detector locks is compared with the profile's
// allocation sequence; a match puts a plan in force without profiling, a mismatch starts the profiler.
void match_profile(Manager& m, const ObjectEvent& e) {
  if (e.step < 0 || e.period == 0) return;
  if (e.period != m.candidate->period) {
    if (e.step > 2) {
      log_write(LogLevel::kWarn, (given_profile_name(m) + " does not match this program (period " + std::to_string(e.period) +
                                  ", the profile's " + std::to_string(m.candidate->period) + "): profiling instead")
                                     .c_str());
      m.candidate.reset();
      m.stage = Stage::kProfiling;
      profiler_set_active(true);
    }
    return;
  }
  if (m.match_step < 0) {
    if (e.event != 0) return;
    m.match_step = e.step;
  }
  if (e.step == m.match_step) {
    ++m.match_events;
    m.match_seen.push_back(e.tag);
    if (e.event < m.candidate_tags.size() && m.candidate_tags[e.event] == manage::plan_tag(e.tag, m.candidate_tags[e.event])) {
      ++m.match_hits;
    }
    return;
  }
  // Threads that allocate concurrently (a DDP rank's autograd and communication threads) may interleave
  // differently from step to step: a step with the profile's tags in another order matches too.
  const double in_order = m.match_events == 0 ? 0.0 : static_cast<double>(m.match_hits) / m.match_events;
  const double share = std::max(in_order, any_order_share(m.candidate_tags, m.match_seen));
  if (share >= kProfileMatchShare) {
    m.profile = m.candidate;
    m.step = e.step;
    if (plan_and_start(m, (given_profile_name(m) + " matches").c_str()) && m.profile_source == "LOCAL_RANK 0") {
      ++m.plans_from_leader;
    }
  } else {
    log_write(LogLevel::kWarn, (given_profile_name(m) + " does not match this program (" +
                                std::to_string(static_cast<int>(share * 100)) +
                                "% of a step's allocations carry the profile's tags): profiling instead")
                                   .c_str());
    m.stage = Stage::kProfiling;
    profiler_set_active(true);
  }
  m.candidate.reset();
  m.match_seen.clear();
}

// Profile once (docs/distributed.md): a rank other than its host's LOCAL_RANK 0 waits for that rank's
// profile, then matches it against its own steps like SENTINEL_PROFILE_IN; when none comes in time it
// profiles itself.
void poll_shared_profile(Manager& m) {
  struct stat st;
  const char* path = g_state.shared_profile;
  const bool fresh = stat(path, &st) == 0 &&
                     static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec) >=
                         g_state.start_realtime_ns;
  if (!fresh) {
    if (now_ns() < m.wait_until_ns) return;
    log_write(LogLevel::kWarn, ("managed mode: no profile from LOCAL_RANK 0 within " +
                                std::to_string(g_state.config.profile_wait_s) + " s: profiling this rank")
                                   .c_str());
    m.stage = Stage::kProfiling;
    profiler_set_active(true);
    return;
  }
  auto profile = std::make_shared<StepProfile>();
  std::string error;
  if (!read_profile_file(path, profile.get(), &error)) {
    log_write(LogLevel::kWarn, ("managed mode: LOCAL_RANK 0's profile rejected (" + error + "): profiling this rank").c_str());
    m.stage = Stage::kProfiling;
    profiler_set_active(true);
    return;
  }
  log_write(LogLevel::kInfo, ("managed mode: took LOCAL_RANK 0's profile " + std::string(path)).c_str());
  m.candidate = profile;
  m.candidate_tags = expected_tags(*profile);
  m.profile_source = "LOCAL_RANK 0";
  m.stage = Stage::kMatchingProfile;
}

// LOCAL_RANK 0 shares its first profile with the host's other ranks (written to a temporary name and
// renamed, so they never read half a file).
void publish_shared_profile(Manager& m) {
  if (!g_state.profile_leader || m.shared_profile_published || !m.profile) return;
  m.shared_profile_published = true;
  std::string error;
  if (write_profile_file(g_state.shared_profile, *m.profile, &error)) {
    log_write(LogLevel::kInfo, ("managed mode: profile shared with this host's ranks: " +
                                std::string(g_state.shared_profile)).c_str());
  } else {
    log_write(LogLevel::kWarn, ("managed mode: cannot share the profile (" + error + ")").c_str());
  }
}

void load_inputs(Manager& m) {
  const Config& c = g_state.config;
  std::string error;
  if (c.plan_in[0] != '\0') {
    auto plan = std::make_unique<Plan>();
    if (read_plan_file(c.plan_in, plan.get(), &error)) {
      m.given_plan = std::move(plan);
    } else {
      log_write(LogLevel::kError, ("SENTINEL_PLAN rejected: " + error + "; Sentinel plans itself").c_str());
    }
  }
  if (c.profile_in[0] != '\0') {
    auto profile = std::make_shared<StepProfile>();
    if (read_profile_file(c.profile_in, profile.get(), &error)) {
      m.candidate = profile;
      m.candidate_tags = expected_tags(*profile);
      m.stage = Stage::kMatchingProfile;
      m.profile_source = "SENTINEL_PROFILE_IN";
      profiler_set_active(false);
    } else {
      log_write(LogLevel::kError, ("SENTINEL_PROFILE_IN rejected: " + error + "; profiling instead").c_str());
    }
  }
  if (g_state.shared_profile[0] != '\0' && !g_state.profile_leader) {
    m.stage = Stage::kWaitingForProfile;
    m.wait_until_ns = now_ns() + uint64_t{c.profile_wait_s} * 1000000000ull;
    profiler_set_active(false);
  }
  if (c.timeline_path[0] != '\0') {
    if (!m.timeline_file.open(c.timeline_path, &error)) {
      log_write(LogLevel::kError, ("cannot write SENTINEL_TIMELINE: " + error).c_str());
    } else {
      m.timeline = std::make_unique<manage::TimelineWriter>(&m.timeline_file, c.timeline_steps);
      m.timeline->set_clock(now_ns);
    }
  }
  m.executor = std::make_unique<PlanExecutor>(&m.sink, m.timeline.get());
  if (m.timeline) m.timeline->attach(m.executor.get());
}

Manager* create_manager() {
  auto* m = new Manager();
  profiler_set_min_period(kMinPlanPeriod);
  std::string error;
  resolve_memory_system(g_state.config.tier, &m->mem, &error);  // checked in manager_configure
  load_inputs(*m);
  return m;
}

}  // namespace

bool manager_configure(bool tiered, char* message, size_t cap) noexcept {
  try {
    MemorySystem mem;
    std::string error;
    if (!resolve_memory_system(g_state.config.tier, &mem, &error)) {
      std::snprintf(message, cap,
                    "sentinel: invalid SENTINEL_TIER='%s': accepted cxl, cxl-2m, optane, optane-2m, dram, or a tier "
                    "file (%s); running as a pass-through allocator",
                    g_state.config.tier, error.c_str());
      return false;
    }
    if (!tiered) {
      log_write(LogLevel::kWarn, "managed mode: a single memory node, nothing to move: running as track mode");
      g_state.config.mode = Mode::kTrack;
      return true;
    }
    // Resident now, not page by page until the ring first wraps (os/resident.h, as the event ring).
    os::make_resident(&g_completions, sizeof g_completions);
    g_manager_live.store(true, std::memory_order_release);
    return true;
  } catch (...) {
    std::snprintf(message, cap, "sentinel: managed mode cannot start (out of memory); running as a pass-through allocator");
    return false;
  }
}

void manager_on_event(const ObjectEvent& e, const LiveObjects&) noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return;
  try {
    std::lock_guard<std::mutex> lock(g_report_mu);
    if (g_manager == nullptr) g_manager = create_manager();
    Manager& m = *g_manager;
    if (e.kind == ObjectEventKind::kFree) {
      m.executor->on_free(ObjectRef{e.slot, e.generation});
      return;
    }
    if (e.kind != ObjectEventKind::kAlloc) return;
    if (m.stage == Stage::kMatchingProfile && m.candidate) match_profile(m, e);
    on_alloc(m, e);
  } catch (...) {
  }
}

void manager_tick(const LiveObjects&) noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return;
  try {
    std::lock_guard<std::mutex> lock(g_report_mu);
    if (g_manager == nullptr) g_manager = create_manager();
    Manager& m = *g_manager;
    drain_completions(m, ~uint64_t{0});
    if (m.stage == Stage::kWaitingForProfile) poll_shared_profile(m);
    if (m.stage != Stage::kProfiling) return;
    uint64_t completed = 0;
    std::shared_ptr<const StepProfile> profile = profiler_completed(&completed);
    if (profile == nullptr || completed == m.profiles_taken) return;
    m.profiles_taken = completed;
    m.profile = profile;
    m.profile_source = "own";
    publish_shared_profile(m);
    profiler_set_active(false);  // no sampling while the plan runs; re-armed if the plan is dropped
    plan_and_start(m, "profile complete");
  } catch (...) {
  }
}

bool manager_lets_quiet_events_wait() noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(g_report_mu);
  const Manager* m = g_manager;
  return m != nullptr && m->stage == Stage::kManaged && m->executor->plan() != nullptr && !m->executor->moves_waiting();
}

void manager_on_move_finished(uint32_t slot, uint32_t generation, uint8_t to_pool, bool moved) noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return;
  g_completions.push(Completion{slot, generation, to_pool, moved, os::measure_ns()});  // the events' clock
  wake_service();
}

void manager_at_exit() noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return;
  try {
    std::lock_guard<std::mutex> lock(g_report_mu);
    if (g_manager == nullptr) return;
    drain_completions(*g_manager, ~uint64_t{0});
    g_manager->executor->finish();  // the program's last step counts too
    if (g_manager->timeline_file.is_open() && g_manager->plans == 0 && g_state.config.timeline_per_process) {
      g_manager->timeline_file.abandon();
    } else if (g_manager->timeline_file.is_open()) {
      std::string error;
      if (!g_manager->timeline_file.commit(&error)) {
        log_write(LogLevel::kError, ("cannot write SENTINEL_TIMELINE: " + error).c_str());
      }
    }
  } catch (...) {
  }
}

ManagerReport manager_report() noexcept {
  ManagerReport r;
  try {
    std::lock_guard<std::mutex> lock(g_report_mu);
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
    r.migration_bw_gbps = m.mem.migration_bw_gbps;
    r.migration_setup_ns = m.mem.migration_setup_ns;
  } catch (...) {
  }
  return r;
}

}  // namespace sentinel::rt
