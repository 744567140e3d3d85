// Scores one profile of a program against another profile of the same program taken as the truth
// (`sentinel profile-diff TRUTH OTHER`): the truth is normally the emulated PMU at sample period 1,
// which counts every cache-model miss and write-back of every object in every phase
// (docs/slow-tier-emulator.md, docs/profiler.md "Accuracy against the ground truth").
//
// Units: a profile counts cache lines per step (misses for a PMU, touched lines for the software
// sampler); the diff speaks in bytes, lines x 64.
//
// Objects are matched by tag (call-site and occurrence: the same tensor in every run of the same
// program). Objects left unmatched are then matched by size and lifetime (size, birth and death
// phase, persistence) where that key is unique on both sides; the count of such matches is reported,
// because a wrong match there is possible and a tag match is not.
//
// The scores:
//   traffic_error       sum over (object, phase) of |other - truth| / sum of truth, in bytes of
//                       reads + writes + write-backs (write-backs only when the truth counts them);
//                       0 is exact; a profile that reports nothing scores 1.
//   miss_traffic_error  the same over reads + writes only (fair to samplers that cannot see write-backs)
//   rw_split_error      over (object, phase) pairs that both profiles saw, the mean of
//                       |other's write share - truth's write share|, weighted by the truth's bytes
//   spearman            rank correlation of the objects' total bytes (every truth object, absent = 0)
//   untouched_hot       truth objects with more than `hot_share` of the truth's bytes that the other
//                       profile reports no traffic for at all
// When the two profiles have different periods their phases cannot be paired: the per-pair scores
// then compare each object's total over the step (phases_compared = false).
//
// Thread safety: pure functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile/profile.h"

namespace sentinel {

struct DiffOptions {
  double hot_share = 0.01;  // untouched_hot: share of the truth's traffic that makes an object hot
};

struct ObjectDiff {
  uint64_t tag = 0;        // the truth's tag (the other's for an object only in the other)
  uint64_t size = 0;
  bool persistent = false;
  bool in_truth = false, in_other = false;
  bool matched_by_size = false;
  // Bytes per step: [0] truth, [1] other.
  uint64_t read_bytes[2] = {0, 0}, write_bytes[2] = {0, 0}, writeback_bytes[2] = {0, 0};
  uint64_t bytes(int side) const { return read_bytes[side] + write_bytes[side] + writeback_bytes[side]; }
};

struct ProfileDiff {
  bool phases_compared = false;
  bool truth_counts_writebacks = false;
  uint64_t truth_bytes = 0, other_bytes = 0;            // per step, with write-backs where counted
  uint64_t truth_miss_bytes = 0, other_miss_bytes = 0;  // reads + writes
  double traffic_error = 0, miss_traffic_error = 0;
  double rw_split_error = 0;   // NaN when no pair was seen by both
  double truth_write_share = 0, other_write_share = 0;
  double spearman = 0;         // NaN with fewer than two objects or no spread
  uint32_t matched_by_tag = 0, matched_by_size = 0, truth_only = 0, other_only = 0;
  std::vector<ObjectDiff> objects;        // truth objects by truth bytes (largest first), then other-only
  std::vector<ObjectDiff> untouched_hot;  // by truth bytes
};

// Compares; false (with *error) only for profiles without objects or phases to compare.
bool diff_profiles(const StepProfile& truth, const StepProfile& other, const DiffOptions& options, ProfileDiff* out,
                   std::string* error);

// A human-readable report: the scores, the untouched hot objects, and the `top` objects with the
// most truth traffic.
std::string format_diff_text(const ProfileDiff& d, size_t top);
// The scores and every object as one JSON document (NaN scores are null).
std::string format_diff_json(const ProfileDiff& d);

// Spearman's rank correlation of two equally long series (ties get their mean rank); NaN when it is
// undefined.
double spearman_rank_correlation(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace sentinel
