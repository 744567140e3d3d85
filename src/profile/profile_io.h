// Reading and writing step profiles (profile.h) in the versioned text format described in
// docs/profile-format.md: a JSON document {"format": "sentinel-profile", "version": 1 or 2, ...}.
// Version 2 adds write-back counts (a fourth element of an access entry, with "writebacks": true),
// "sampler_source" and "samples_lost"; the writer writes version 1 whenever the profile has none of
// them, so profiles without them stay byte for byte what they were, and reads both.
//
// The reader is the trust boundary for profile files: it validates every field (types, integer
// ranges, the invariants stated in profile.h) and rejects anything malformed with a message that names
// the offending field, e.g. "objects[3].death_phase: 17 is not below 2*period (16)". It never throws
// and never aborts on any input, however malformed (fuzzed by tests/fuzz/profile_fuzz.cc).
//
// Invariants of a profile the reader accepts (and that serialize_profile expects of its input):
//   period >= 1 and phases.size() == period;
//   sampler is one of "pebs", "ibs", "software", "none"; sampler_source is "", "perf_event" or
//   "qemu-slowtier"; an access has write-backs only if writebacks_counted;
//   every object has size > 0, a tag no other object has, birth_phase < period,
//   birth_phase <= death_phase < 2*period; a persistent object has birth_phase 0 and
//   death_phase period-1; its accesses are sorted by phase with no phase twice, every phase < period
//   and inside the object's lifetime (a lifetime that wraps past the step end covers phases
//   birth_phase..period-1 and 0..death_phase-period).
// validate_profile() checks exactly these, so a writer can check its output before saving it.
//
// Thread safety: all functions are reentrant; they share no state.
#pragma once

#include <string>
#include <string_view>

#include "profile/profile.h"

namespace sentinel {

inline constexpr std::string_view kProfileFormatName = "sentinel-profile";
inline constexpr int kProfileFormatVersion = 2;  // the newest this code reads and writes

// Checks the invariants above. Returns false and sets *error (if non-null) to the first violation.
bool validate_profile(const StepProfile& p, std::string* error);

// Parses a profile document. On success fills *out and returns true. On failure returns false, sets
// *error (if non-null) and leaves *out unspecified (but valid to destroy or assign).
bool parse_profile(std::string_view text, StepProfile* out, std::string* error);

// Renders a profile as a version-1 document, or version 2 when it needs a version-2 field (above): one
// line per top-level field and one line per object, so
// files diff well. Does not validate (call validate_profile first if the source is untrusted); bytes of
// `program` that are not valid UTF-8 are replaced by U+FFFD. Returns "" only if memory runs out.
std::string serialize_profile(const StepProfile& p);

// File wrappers. read_profile_file rejects files larger than kMaxProfileFileBytes.
// write_profile_file validates first, writes to "<path>.tmp" and renames, so readers never see a
// partially written file; errors carry strerror(errno) and the path.
inline constexpr size_t kMaxProfileFileBytes = size_t{1} << 30;
bool read_profile_file(const std::string& path, StepProfile* out, std::string* error);
bool write_profile_file(const std::string& path, const StepProfile& p, std::string* error);

}  // namespace sentinel
