#include "reprofile_policy.h"

#include <algorithm>

namespace sentinel::manage {

void ReprofilePolicy::plan_started(int64_t first) {
  const uint64_t wait =
      unheld_ == 0 ? 0 : uint64_t{s_.backoff_base_steps} << std::min(unheld_ - 1, s_.max_backoff_shift);
  gate_ = first + static_cast<int64_t>(wait);
  fallbacks_in_row_ = followed_in_row_ = 0;
  held_ = false;
}

void ReprofilePolicy::count_unheld() {
  if (held_) return;
  ++unheld_;
  if (unheld_ >= s_.max_unheld_plans) stopped_ = true;
}

ReprofilePolicy::Verdict ReprofilePolicy::step_closed(int64_t step, bool followed) {
  if (followed) {
    fallbacks_in_row_ = 0;
    if (++followed_in_row_ >= s_.held_steps && !held_) {
      held_ = true;
      unheld_ = 0;  // the program does repeat: a later plan starts again without a wait
    }
    return Verdict::kKeep;
  }
  followed_in_row_ = 0;
  if (++fallbacks_in_row_ < s_.fallbacks_before_drop || stopped_) return Verdict::kKeep;
  if (step < gate_) {
    // Counted once per run of fallbacks that reached the threshold.
    if (fallbacks_in_row_ == s_.fallbacks_before_drop) ++deferred_;
    return Verdict::kKeep;
  }
  fallbacks_in_row_ = 0;
  count_unheld();
  return stopped_ ? Verdict::kStopReprofiling : Verdict::kDrop;
}

bool ReprofilePolicy::may_profile_after_structure_change() {
  if (stopped_) return false;
  count_unheld();
  return !stopped_;
}

}  // namespace sentinel::manage
