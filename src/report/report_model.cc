#include "report/report_model.h"

#include <algorithm>
#include <numeric>
#include <fstream>

#include "plan/cost_model.h"
#include "plan/profile_index.h"
#include "plan/replay.h"
#include "plan/tag_text.h"
#include "plan/tier_model.h"
#include "plan/timeline.h"
#include "profile/profile_io.h"

namespace sentinel::report {
namespace {

using Json = nlohmann::ordered_json;

// One character per object and phase in the object timeline ("states" strings; docs/report.md).
char state_char(ObjectPhaseState s) {
  switch (s) {
    case ObjectPhaseState::kDead: return '.';
    case ObjectPhaseState::kFast: return 'F';
    case ObjectPhaseState::kSlow: return 'S';
    case ObjectPhaseState::kToFast: return 'P';
    case ObjectPhaseState::kToSlow: return 'E';
  }
  return '.';
}

// Objects shown in the timeline: the largest first, ties broken by the most accesses.
std::vector<uint32_t> object_rows(const ProfileIndex& index, uint32_t max_rows) {
  std::vector<uint32_t> order(index.objects().size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const ObjectView &x = index.object(a), &y = index.object(b);
    if (x.size != y.size) return x.size > y.size;
    return x.total_accesses > y.total_accesses;
  });
  if (order.size() > max_rows) order.resize(max_rows);
  return order;
}

bool simulate(const ProfileIndex& index, const Plan& plan, const MemorySystem& mem, uint32_t steps,
              uint64_t budget, bool objects, SimResult* r, std::string* error) {
  SimOptions so;
  so.steps = steps;
  so.budget_bytes = budget;
  so.record_objects = objects;
  return simulate_plan(index, plan, mem, so, r, error);
}

// Bytes of evictions and prefetches issued per phase.
void traffic(const ProfileIndex& index, const std::vector<IssuedMove>& moves, Json* evict, Json* prefetch) {
  std::vector<uint64_t> ev(index.period(), 0), pf(index.period(), 0);
  for (const IssuedMove& m : moves)
    (m.kind == MoveKind::kEvict ? ev : pf)[m.phase] += index.object(m.obj).size;
  *evict = ev;
  *prefetch = pf;
}

// Per shown object: its state string, the phases its evictions and prefetches were issued at and its
// late uses, from a simulation with record_objects.
Json object_timeline(const ProfileIndex& index, const std::vector<uint32_t>& rows, const SimResult& r) {
  const uint32_t P = index.period();
  const size_t n = index.objects().size();
  Json out = Json::array();
  for (uint32_t i : rows) {
    const ObjectView& o = index.object(i);
    std::string states(P, '.');
    for (uint32_t k = 0; k < P; ++k) states[k] = state_char(r.object_state[k * n + i]);
    Json ev = Json::array(), pf = Json::array(), late = Json::array();
    for (const IssuedMove& m : r.issued)
      if (m.obj == i) (m.kind == MoveKind::kEvict ? ev : pf).push_back(m.phase);
    for (const LateUse& u : r.late_uses)
      if (u.obj == i) late.push_back({{"phase", u.phase}, {"stall_ns", u.stall_ns}});
    out.push_back({{"tag", format_tag(o.tag)},
                   {"size_bytes", o.size},
                   {"accesses", o.total_accesses},
                   {"persistent", o.cyclic},
                   {"birth_phase", o.birth},
                   {"life_phases", o.life},
                   {"states", states},
                   {"evictions", ev},
                   {"prefetches", pf},
                   {"late", late}});
  }
  return out;
}

// The executed step shown: the last recorded step that kept to the plan, else the last one.
const ExecutedStep* pick_step(const ExecutedTimeline& t) {
  const ExecutedStep* pick = nullptr;
  for (const ExecutedStep& s : t.steps)
    if (!s.deviated) pick = &s;
  if (pick == nullptr && !t.steps.empty()) pick = &t.steps.back();
  return pick;
}

bool executed_part(const ReportInputs& in, const ProfileIndex& index, const MemorySystem& mem, uint32_t steps,
                   const std::vector<uint32_t>& rows, Json* out, std::string* error) {
  ExecutedTimeline t;
  if (!read_timeline_file(in.timeline_path, &t, error)) return false;
  const ExecutedStep* step = pick_step(t);
  if (step == nullptr) {
    *out = {{"path", in.timeline_path}, {"steps_recorded", 0}};
    return true;
  }
  Plan plan;
  SimResult r;
  if (!executed_plan(t, *step, index, &plan, error) ||
      !simulate(index, plan, mem, steps, t.budget_bytes, true, &r, error))
    return false;
  // States as recorded by the runtime (not modeled): F, S, M (a move in flight), '.' (not listed).
  const uint32_t P = index.period();
  std::unordered_map<uint64_t, std::string> states;
  for (uint32_t i : rows) states[index.object(i).tag] = std::string(P, '.');
  for (const auto& [k, ph] : step->phases) {  // only the phases with a record
    if (k >= P) break;
    auto mark = [&](const std::vector<uint64_t>& tags, char c) {
      for (uint64_t tag : tags) {
        auto it = states.find(tag);
        if (it != states.end()) it->second[k] = c;
      }
    };
    mark(ph.fast, 'F');
    mark(ph.slow, 'S');
    mark(ph.moving, 'M');
  }
  Json objects = object_timeline(index, rows, r);
  for (Json& o : objects) {
    uint64_t tag = 0;
    parse_tag_text(o["tag"].get<std::string>(), &tag);
    o["states"] = states[tag];
  }
  Json ev, pf;
  std::vector<uint64_t> e(P, 0), p(P, 0);
  for (const TimelineMove& m : step->issued) {
    const int64_t i = index.find(m.tag);
    if (i < 0 || m.phase >= P) continue;
    (m.to == Tier::kSlow ? e : p)[m.phase] += index.object(static_cast<uint32_t>(i)).size;
  }
  *out = {{"path", in.timeline_path},
          {"steps_recorded", t.steps.size()},
          {"step", step->step},
          {"deviated", step->deviated},
          {"policy", t.policy},
          {"budget_bytes", t.budget_bytes},
          {"moves_issued", step->issued.size()},
          {"moves_done", step->moves_done},
          {"moves_failed", step->moves_failed},
          {"modeled_late_prefetches", r.late_prefetches},
          {"evict_bytes", e},
          {"prefetch_bytes", p},
          {"objects", objects}};
  return true;
}

Json summary(const Json& policies, uint64_t budget, uint64_t peak) {
  Json s = {{"budget_bytes", budget}, {"budget_share", peak > 0 ? static_cast<double>(budget) / peak : 0.0}};
  const Json* best = nullptr;
  for (const Json& r : policies) {
    const std::string p = r["policy"];
    if (p == "sentinel") {
      s["sentinel_step_time_ns"] = r["step_time_ns"];
      s["sentinel_ratio"] = r["step_time_ratio"];
      s["sentinel_migrated_bytes"] = r["migrated_bytes"];
      s["sentinel_late_prefetches"] = r["late_prefetches"];
      s["sentinel_dram_peak_bytes"] = r["dram_peak_bytes"];
      s["sentinel_budget_insufficient"] = r["budget_insufficient"];
    } else if (p == "all-dram") {
      s["all_dram_step_time_ns"] = r["step_time_ns"];
    } else if (p == "optimal") {
      s["optimal_ratio"] = r["step_time_ratio"];
      s["optimal_status"] = r["solver_status"];
    } else if (p.rfind("executed", 0) != 0 && (best == nullptr || r["step_time_ns"] < (*best)["step_time_ns"])) {
      best = &r;
    }
  }
  if (best != nullptr) {
    s["best_baseline"] = (*best)["policy"];
    s["best_baseline_ratio"] = (*best)["step_time_ratio"];
  }
  return s;
}

}  // namespace

bool wants_optimal(const ReportInputs& in) {
  StepProfile profile;
  std::string error;
  if (!read_profile_file(in.profile_path, &profile, &error)) return false;
  return static_cast<uint64_t>(profile.period) * profile.objects.size() <= in.auto_optimal_cells;
}

bool build_report_model(const ReportInputs& in, Json* out, std::string* error) {
  StepProfile profile;
  if (!read_profile_file(in.profile_path, &profile, error)) return false;
  ProfileIndex index;
  MemorySystem mem;
  if (!index.build(profile, error) || !resolve_memory_system(in.tier, &mem, error)) return false;
  const uint32_t P = index.period();
  const uint64_t cells = static_cast<uint64_t>(P) * index.objects().size();
  ReplayOptions options;
  options.planner = in.planner;
  options.optimal = in.optimal_config;
  options.with_optimal = in.optimal == OptimalMode::kOn ||
                         (in.optimal == OptimalMode::kAuto && cells <= in.auto_optimal_cells);
  const uint64_t budget = resolve_budget(options.planner, index);

  std::vector<ReplayRow> rows;
  std::vector<Plan> plans;
  if (!replay_policies(index, mem, options, &rows, error, &plans)) return false;
  const size_t planned_rows = rows.size();
  if (!in.timeline_path.empty() && !add_executed_rows(in.timeline_path, index, mem, options, &rows, error))
    return false;
  Json policies = Json::parse(format_rows_json(rows));
  const std::vector<uint32_t> shown = object_rows(index, in.max_object_rows);
  Json objects, evict, prefetch;
  for (size_t i = 0; i < planned_rows; ++i) {
    SimResult r;
    const bool is_sentinel = rows[i].policy == "sentinel";
    if (!simulate(index, plans[i], mem, options.steps, rows[i].budget_bytes, is_sentinel, &r, error)) return false;
    policies[i]["residency_bytes"] = r.residency;
    if (is_sentinel) {
      objects = object_timeline(index, shown, r);
      traffic(index, r.issued, &evict, &prefetch);
    }
  }
  Json executed;
  if (!in.timeline_path.empty()) {
    if (!executed_part(in, index, mem, options.steps, shown, &executed, error)) return false;
    // Residency of the executed steps, modeled like the planned rows.
    ExecutedTimeline t;
    if (!read_timeline_file(in.timeline_path, &t, error)) return false;
    for (size_t s = 0; s < t.steps.size() && planned_rows + s < rows.size(); ++s) {
      Plan plan;
      SimResult r;
      if (!executed_plan(t, t.steps[s], index, &plan, error) ||
          !simulate(index, plan, mem, options.steps, t.budget_bytes, false, &r, error))
        return false;
      policies[planned_rows + s]["residency_bytes"] = r.residency;
    }
  }
  std::vector<SweepPoint> points;
  if (!sweep_budgets(index, mem, options, &points, error)) return false;

  std::vector<uint64_t> durations(P), starts(P), live(P);
  uint64_t t = 0;
  for (uint32_t k = 0; k < P; ++k) {
    durations[k] = index.duration(k);
    starts[k] = t;
    t += durations[k];
    live[k] = index.live_bytes(k);
  }
  uint64_t shown_bytes = 0, all_bytes = 0;
  for (uint32_t i : shown) shown_bytes += index.object(i).size;
  for (const ObjectView& o : index.objects()) all_bytes += o.size;

  Json j;
  j["format"] = "sentinel-report";
  j["version"] = 1;
  j["modeled"] = "step times, residency, traffic and late prefetches are modeled by the cost model "
                 "(docs/tier-model.md), not measured";
  j["profile"] = {{"path", in.profile_path},
                  {"program", profile.program},
                  {"period", P},
                  {"objects", index.objects().size()},
                  {"peak_bytes", index.peak_bytes()},
                  {"step_time_ns", index.step_ns()},
                  {"profiled_steps", profile.profiled_steps},
                  {"sampler", profile.sampler},
                  {"dropped_accesses", index.dropped_accesses()}};
  j["tier"] = {{"name", in.tier}, {"description", describe_memory_system(mem)}};
  j["optimal"] = {{"ran", options.with_optimal},
                  {"cells", cells},
                  {"time_limit_s", options.optimal.time_limit_s},
                  {"mode", in.optimal == OptimalMode::kOn ? "on" : in.optimal == OptimalMode::kOff ? "off" : "auto"}};
  j["summary"] = summary(policies, budget, index.peak_bytes());
  j["policies"] = policies;
  j["phases"] = {{"start_ns", starts}, {"duration_ns", durations}, {"live_bytes", live}};
  j["traffic"] = {{"policy", "sentinel"}, {"evict_bytes", evict}, {"prefetch_bytes", prefetch}};
  j["objects"] = {{"policy", "sentinel"},
                  {"shown", shown.size()},
                  {"total", index.objects().size()},
                  {"shown_bytes", shown_bytes},
                  {"total_bytes", all_bytes},
                  {"rows", objects}};
  j["sweep"] = Json::parse(format_sweep_json(points));
  if (!executed.is_null()) j["executed"] = executed;
  if (!in.stats_path.empty()) {
    std::ifstream f(in.stats_path);
    const Json stats = f ? Json::parse(f, nullptr, false) : Json();
    if (stats.is_discarded() || !stats.is_object()) {
      *error = "cannot read the stats file " + in.stats_path;
      return false;
    }
    j["stats"] = stats;
  }
  *out = std::move(j);
  return true;
}

}  // namespace sentinel::report
