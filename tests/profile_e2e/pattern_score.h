// Scoring a recorded profile against the known access pattern of tests/profile_e2e/known_pattern.cc,
// and running that program. Shared by the end-to-end test and bench/profile/accuracy.
//
// The metric: every (object, phase) pair in which the program touches the object is a true pair; a
// pair the profile reports (an access entry with reads + writes > 0) is a reported pair. Profile
// objects are matched to the program's objects by size (the program gives every object a distinct
// size). Precision = true reported pairs / reported pairs, recall = true reported pairs / true pairs.
// Accesses of a profile object that matches no program object are all false pairs. A profiler that
// records nothing has recall 0; one that attributes accesses to random live phases has precision
// near the density of true pairs among alive pairs (`density` below, about 0.4 for the pattern).
// When the step detector starts the step at another event than the program does, the truth is rotated
// to the profile's step clock first (the rotation that aligns the most births).
//
// Thread safety: plain functions over values; run_program forks and must not race with other forks
// that need the caller's file descriptors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"

namespace sentinel::e2e {

struct TruthObject {
  std::string name;
  uint64_t size = 0;
  bool persistent = false;
  uint32_t birth = 0, death = 0;           // as in ObjectProfile (death >= period wraps)
  std::map<uint32_t, std::string> uses;  // phase -> "r", "w" or "rw"
};

struct Truth {
  uint32_t period = 0;
  std::vector<TruthObject> objects;
};

// Parses the output of `known_pattern --print-truth`. Returns false with *error on malformed text.
bool parse_truth(std::string_view text, Truth* out, std::string* error);

struct PatternScore {
  uint32_t period_expected = 0, period_got = 0;
  // Detected steps may begin at another event than the program's first: profile phase
  // (program phase + rotation) % period. The truth is rotated so before scoring.
  uint32_t rotation = 0;
  int objects = 0, matched = 0, missing = 0, extra = 0;  // program objects; matched; unmatched; profile extras
  int persistent_right = 0;  // matched objects whose persistent flag is right
  int lifetimes_right = 0;   // matched objects whose birth and death phases are right
  int tp = 0, fp = 0, fn = 0;
  double precision = 0, recall = 0;
  double density = 0;        // true pairs / alive (object, phase) pairs: what random attribution scores
  int write_pairs = 0, writes_seen = 0;  // true pairs written first ("w"); of those, reported with writes > reads
  int cold_objects = 0, cold_clean = 0;  // objects never touched; of those, with no reported access
  std::vector<std::string> notes;        // each mismatch, one line each
};

PatternScore score_profile(const StepProfile& profile, const Truth& truth);
// A multi-line human-readable summary of a score (for test failure messages and the benchmark).
std::string describe(const PatternScore& s);

struct RunResult {
  int status = -1;  // waitpid status; -1 if the program could not be started
  std::string out, err;
};
// Runs argv[0] with the caller's environment minus LD_PRELOAD and SENTINEL_*, plus `env` ("K=V"),
// capturing stdout and stderr (through temporary files, so neither pipe can fill up).
RunResult run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// Runs argv under libsentinel.so `lib` in profile mode with the software sampler (1 warm-up step, 2
// profiled) and reads the profile it writes into *profile. False, with *error (the run's stderr, or why
// the profile could not be read), when the program did not exit 0 or wrote no readable profile.
bool profile_with_software_sampler(const std::string& lib, const std::vector<std::string>& argv, RunResult* run,
                                   StepProfile* profile, std::string* error);

// Values of the "kp: maps step S protected_pages N" lines of known_pattern's stderr, by step.
std::map<int, long> protected_pages_by_step(const std::string& err);
// The first step whose "kp: step S sentinel_step X period P" line shows P > 0, or -1.
int first_step_with_period(const std::string& err);

}  // namespace sentinel::e2e
