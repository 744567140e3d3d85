// Encodings of the default PEBS events, checked with libpfm4 forced to a Skylake PMU model so they
// can be checked on any x86 host (including AMD VMs without a PMU).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "sampler/pmu_event.h"
#include "sampler/pmu_sampler.h"

namespace sentinel {
namespace {

TEST(PmuEvent, L3MissEncodesAsRawEvent) {
  PmuEventEncoding e;
  std::string err;
  ASSERT_TRUE(encode_pmu_event(default_pebs_event(false, 0), &e, &err)) << err;
  EXPECT_EQ(e.type, uint32_t{PERF_TYPE_RAW});
  EXPECT_EQ(e.config, 0x20d1u);
  EXPECT_EQ(e.config1, 0u);
  EXPECT_TRUE(e.exclude_kernel);  // user level only
  EXPECT_NE(e.fstr.find("MEM_LOAD_RETIRED"), std::string::npos) << e.fstr;
}

TEST(PmuEvent, LoadLatencyCarriesThresholdInConfig1) {
  EXPECT_EQ(default_pebs_event(true, 64), "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=64");
  PmuEventEncoding e;
  std::string err;
  ASSERT_TRUE(encode_pmu_event(default_pebs_event(true, 64), &e, &err)) << err;
  EXPECT_EQ(e.type, uint32_t{PERF_TYPE_RAW});
  EXPECT_EQ(e.config, 0x1cdu);
  EXPECT_EQ(e.config1, 0x40u);
  ASSERT_TRUE(encode_pmu_event(default_pebs_event(true, 128), &e, &err)) << err;
  EXPECT_EQ(e.config1, 0x80u);
}

TEST(PmuEvent, UnknownEventNamesTheEvent) {
  PmuEventEncoding e;
  std::string err;
  EXPECT_FALSE(encode_pmu_event("NO_SUCH_EVENT:FOO", &e, &err));
  EXPECT_NE(err.find("NO_SUCH_EVENT:FOO"), std::string::npos) << err;
  EXPECT_NE(err.find("not found"), std::string::npos) << err;
}

TEST(PmuEvent, PebsAttributeUsesTheEncoding) {
  PmuSamplerOptions opt;
  opt.kind = SamplerKind::kPebs;
  opt.sample_period = 4001;
  perf_event_attr attr;
  const Status r = build_pmu_attr(opt, &attr);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(attr.type, uint32_t{PERF_TYPE_RAW});
  EXPECT_EQ(attr.config, 0x20d1u);
  EXPECT_EQ(attr.sample_period, 4001u);
  EXPECT_EQ(attr.precise_ip, 2u);
  EXPECT_EQ(attr.exclude_kernel, 1u);
  EXPECT_EQ(attr.sample_type, uint64_t{PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                                       PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC});
  opt.event = "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=32";  // override by name
  ASSERT_TRUE(build_pmu_attr(opt, &attr).is_ok());
  EXPECT_EQ(attr.config1, 0x20u);
}

}  // namespace
}  // namespace sentinel

int main(int argc, char** argv) {
  setenv("LIBPFM_FORCE_PMU", "skl", 1);  // before libpfm4 initialises (first encode call)
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
