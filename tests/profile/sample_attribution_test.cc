// SampleAttributor (src/profile/sample_attribution.h): a sample goes to the instance and phase of
// its access, by the step clock or by time, also when it is read phases later and the extent holds
// another object by then.
#include "profile/sample_attribution.h"

#include <gtest/gtest.h>

namespace sentinel {
namespace {

TEST(SampleAttribution, ByStepClockAcrossPhasesAndExtentReuse) {
  SampleAttributor a;
  a.on_object(/*key=*/100, /*start=*/0x10000, /*size=*/0x1000, 0, 0);  // alive before the profile
  a.on_phase(/*clock=*/5, /*time=*/500, /*step=*/0, /*phase=*/0);
  a.on_object(200, 0x20000, 0x800, 5, 500);  // born at event 0
  a.on_phase(6, 600, 0, 1);
  a.on_object(300, 0x20000, 0x1000, 7, 700);  // the same extent, another object, born at event 2
  a.on_phase(7, 700, 0, 2);
  a.on_phase(8, 800, 1, 0);
  SampleAttributor::Hit h;
  EXPECT_FALSE(a.by_clock(0x10000, 4, &h));  // before the profile's first phase
  ASSERT_TRUE(a.by_clock(0x10010, 5, &h));
  EXPECT_EQ(h.key, 100u);
  EXPECT_EQ(h.phase, 0u);
  ASSERT_TRUE(a.by_clock(0x20400, 6, &h));
  EXPECT_EQ(h.key, 200u);
  EXPECT_EQ(h.phase, 1u);
  EXPECT_FALSE(a.by_clock(0x20900, 6, &h));  // past object 200's size (inside its extent)
  ASSERT_TRUE(a.by_clock(0x20900, 7, &h));   // object 300 is larger
  EXPECT_EQ(h.key, 300u);
  EXPECT_EQ(h.phase, 2u);
  ASSERT_TRUE(a.by_clock(0x20000, 9, &h));
  EXPECT_EQ(h.key, 300u);
  EXPECT_EQ(h.step, 1u);
  EXPECT_EQ(h.phase, 0u);
  EXPECT_FALSE(a.by_clock(0x30000, 9, &h));  // no object there
  EXPECT_FALSE(a.by_clock(0x100, 9, &h));    // below every object
}

TEST(SampleAttribution, ByTimeWithStampsSlightlyOutOfOrder) {
  SampleAttributor a;
  a.on_phase(1, 1000, 0, 0);
  a.on_object(1, 0x10000, 0x1000, 1, 1000);
  a.on_phase(2, 990, 0, 1);  // stamped a little before the previous event: kept at 1000
  a.on_phase(3, 3000, 0, 2);
  SampleAttributor::Hit h;
  EXPECT_FALSE(a.by_time(0x10000, 999, &h));
  ASSERT_TRUE(a.by_time(0x10000, 1000, &h));
  EXPECT_EQ(h.phase, 1u);  // both phases began at 1000: the later one holds the sample
  ASSERT_TRUE(a.by_time(0x10000, 2999, &h));
  EXPECT_EQ(h.phase, 1u);
  ASSERT_TRUE(a.by_time(0x10fff, 3000, &h));
  EXPECT_EQ(h.phase, 2u);
  a.clear();
  EXPECT_FALSE(a.by_time(0x10000, 5000, &h));
  EXPECT_EQ(a.phases(), 0u);
}

}  // namespace
}  // namespace sentinel
