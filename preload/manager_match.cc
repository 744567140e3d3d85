// Managed mode: matching a given profile (SENTINEL_PROFILE_IN, or LOCAL_RANK 0's) against the program's
// steps before its plan is put in force. Caller holds g_manager_mu (manager_state.h).
#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "logging.h"
#include "manager_state.h"
#include "core/hash.h"
#include "profiler.h"

namespace sentinel::rt::managed {
namespace {

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
    if (it == left.end()) it = left.find(derived_tag(t));
    if (it == left.end()) continue;
    left.erase(it);
    ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(seen.size());
}

}  // namespace

std::vector<uint64_t> expected_tags(const StepProfile& p) {
  std::vector<uint64_t> tags(p.period, 0);
  for (const ObjectProfile& o : p.objects) {
    if (!o.persistent && o.birth_phase < p.period) tags[o.birth_phase] = o.tag;
  }
  return tags;
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

}  // namespace sentinel::rt::managed
