// The software sampler counts passes, not touches (issue 20): pass_pattern.c makes 8, 4, 2, 1 and 0
// passes per step over five 64 MiB buffers from one call site; under SENTINEL_MODE=profile with the
// software sampler the profile must give each buffer traffic in that ratio, within 30%, and the first
// pass of each buffer (a memset) as writes. A sampler that counts one touch per object and phase
// scores 1:1:1:1 and fails. The buffers are 64 MiB so that one pass lasts milliseconds on the host,
// many times the profiler's rearm interval (50 us or four times a rearm's cost), even on a loaded
// machine; the test checks ratios only, never times.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pattern_score.h"

namespace sentinel::e2e {
namespace {

TEST(PassPattern, SoftwareSamplerCountsPassesInRatio) {
  const std::vector<std::string> argv = {PASS_PATTERN, "--steps", "5", "--mib", "64"};
  const RunResult plain = run_program(argv, {});
  RunResult r;
  StepProfile p;
  std::string error;
  ASSERT_TRUE(profile_with_software_sampler(SENTINEL_LIB, argv, &r, &p, &error)) << error;
  EXPECT_EQ(r.out, plain.out);  // the program computes the same under the sampler

  std::vector<const ObjectProfile*> buffers;
  for (const ObjectProfile& o : p.objects)
    if (!o.persistent && o.size == (64u << 20)) buffers.push_back(&o);
  ASSERT_EQ(buffers.size(), 5u);
  std::sort(buffers.begin(), buffers.end(),
            [](const ObjectProfile* a, const ObjectProfile* b) { return a->occurrence < b->occurrence; });
  std::vector<double> traffic;
  for (const ObjectProfile* o : buffers) traffic.push_back(static_cast<double>(o->total_accesses()));
  const double one_pass = traffic[3];
  ASSERT_GT(one_pass, 0);
  const double want[] = {8, 4, 2, 1};
  for (int b = 0; b < 4; ++b) {
    EXPECT_NEAR(traffic[b] / one_pass, want[b], 0.3 * want[b]) << "buffer " << b;
    uint64_t writes = 0;
    for (const auto& a : buffers[b]->accesses) writes += a.writes;
    EXPECT_GT(writes, 0u) << "buffer " << b << ": the memset pass is a write";
  }
  EXPECT_EQ(traffic[4], 0) << "the fifth buffer is never touched";
}

}  // namespace
}  // namespace sentinel::e2e
