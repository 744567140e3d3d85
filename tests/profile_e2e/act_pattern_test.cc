// The software sampler sees a step's activations (issue 20): act_pattern.c writes one 4 MiB buffer per
// layer right after allocating it (forward) and reads it back in the layer's backward phase, with 300
// small weights alive throughout. The profile must give each activation its write pass in its birth phase
// and its read pass in its backward phase. Before the touches carried the step clock and births were armed
// by the allocation path, the service thread re-armed every live object at every phase boundary, fell
// behind, and found the step's buffers already freed: each activation had no traffic at all, and a
// planner saw nothing to move. The test checks phases and ratios only, never times: the program waits
// for the service thread's rearm before each backward read (--sync-arm-ms; without it, 4 of 10 runs
// here missed most reads when the rearm came late), so how soon that thread runs does not count.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pattern_score.h"

namespace sentinel::e2e {
namespace {

constexpr int kLayers = 8;
constexpr uint64_t kBytes = 4u << 20;

TEST(ActPattern, ActivationsAreWrittenAtBirthAndReadInTheirBackwardPhase) {
  const std::vector<std::string> argv = {ACT_PATTERN, "--steps", "6", "--layers", std::to_string(kLayers), "--kib",
                                         std::to_string(kBytes >> 10), "--weights", "300",
                                         "--sync-arm-ms", "2000"};
  const RunResult plain = run_program(argv, {});
  RunResult r;
  StepProfile p;
  std::string error;
  ASSERT_TRUE(profile_with_software_sampler(SENTINEL_LIB, argv, &r, &p, &error)) << error;
  EXPECT_EQ(r.out, plain.out);  // the program computes the same under the sampler
  ASSERT_EQ(p.period, 2u * kLayers);

  // Activations are born at events 0..L-1, gradients at L..2L-1.
  std::vector<const ObjectProfile*> acts;
  for (const ObjectProfile& o : p.objects)
    if (!o.persistent && o.size == kBytes && o.birth_phase < kLayers) acts.push_back(&o);
  ASSERT_EQ(acts.size(), static_cast<size_t>(kLayers));
  std::sort(acts.begin(), acts.end(),
            [](const ObjectProfile* a, const ObjectProfile* b) { return a->birth_phase < b->birth_phase; });
  const double one_pass = static_cast<double>(kBytes / 64);
  int writes_at_birth = 0, reads_in_backward = 0;
  for (int l = 0; l < kLayers; ++l) {
    const ObjectProfile& o = *acts[l];
    ASSERT_EQ(o.birth_phase, static_cast<uint32_t>(l));
    const uint32_t backward = 2 * kLayers - 1 - l;
    uint64_t birth_writes = 0, backward_reads = 0, other = 0;
    for (const PhaseAccess& a : o.accesses) {
      if (a.phase == o.birth_phase) {
        birth_writes += a.writes;
        other += a.reads;
      } else if (a.phase == backward) {
        backward_reads += a.reads;
        other += a.writes;
      } else {
        other += a.total();
      }
    }
    // A pass is one pass per profiled step, averaged; one of the two steps may miss it on a loaded machine.
    if (birth_writes >= 0.45 * one_pass) ++writes_at_birth;
    if (backward_reads >= 0.45 * one_pass) ++reads_in_backward;
    EXPECT_LE(static_cast<double>(other), 0.3 * one_pass) << "activation " << l << ": traffic in phases it is not used";
  }
  EXPECT_EQ(writes_at_birth, kLayers) << "the allocation path arms every birth before the program writes it";
  EXPECT_GE(reads_in_backward, kLayers - 2) << "the backward read of most activations";
}

}  // namespace
}  // namespace sentinel::e2e
