// Managed mode: matching a given profile (SENTINEL_PROFILE_IN, or LOCAL_RANK 0's) against the program's
// steps before its plan is put in force. Caller holds g_manager_mu (manager_state.h).
#include <memory>
#include <string>
#include <utility>

#include "logging.h"
#include "manage/profile_match.h"
#include "manager_state.h"
#include "profiler.h"

namespace sentinel::rt::managed {
namespace {

// How the log names the profile being matched.
std::string given_profile_name(const Manager& m) {
  return m.profile_source == "LOCAL_RANK 0" ? "LOCAL_RANK 0's profile" : "SENTINEL_PROFILE_IN";
}

}  // namespace

bool take_candidate(Manager& m, std::shared_ptr<const StepProfile> profile, std::string* error) {
  ProfileIndex index;
  if (!index.build(*profile, error)) return false;
  m.matcher = std::make_unique<manage::ProfileMatcher>(manage::expected_tags(index));
  m.candidate = std::move(profile);
  return true;
}

// The first whole step after the detector locks is compared with the profile's allocation sequence
// (manage/profile_match.h); a match puts a plan in force without profiling, a mismatch starts the profiler.
void match_profile(Manager& m, const ObjectEvent& e, LiveObjects& live) {
  using Verdict = manage::ProfileMatcher::Verdict;
  switch (m.matcher->on_alloc(e.step, e.event, e.period, e.tag)) {
    case Verdict::kUndecided:
      return;
    case Verdict::kOtherPeriod:
      log_write(LogLevel::kWarn, (given_profile_name(m) + " does not match this program (period " + std::to_string(e.period) +
                                  ", the profile's " + std::to_string(m.matcher->period()) + "): profiling instead")
                                     .c_str());
      m.stage = Stage::kProfiling;
      profiler_set_active(true);
      break;
    case Verdict::kMatches:
      // The objects alive before this step are the profile's persistent ones: those that share a tag get
      // theirs as the profile's recording run gave them (the same objects in the same order).
      name_persistent_twins(live, instance_key(e.slot, e.generation));
      apply_twin_renames(m);
      m.profile = m.candidate;
      m.step = e.step;
      if (plan_and_start(m, (given_profile_name(m) + " matches").c_str()) && m.profile_source == "LOCAL_RANK 0") {
        ++m.plans_from_leader;
      }
      break;
    case Verdict::kDiffers:
      log_write(LogLevel::kWarn, (given_profile_name(m) + " does not match this program (" +
                                  std::to_string(static_cast<int>(m.matcher->share() * 100)) +
                                  "% of a step's allocations carry the profile's tags): profiling instead")
                                     .c_str());
      m.stage = Stage::kProfiling;
      profiler_set_active(true);
      break;
  }
  m.candidate.reset();
  m.matcher.reset();
}

}  // namespace sentinel::rt::managed
