// The emulated PMU end to end in one process, without QEMU: the process's side (src/sampler/emulated_pmu.h)
// makes its requests through a marked store that hands the store to the plugin's real registry
// (tools/qemu-slowtier/pmu_registry.h), as the plugin's store callback does; the "guest RAM" is this
// process's memory. Events are fed to the registry as the plugin's cache model would.
#include "pmu_registry.h"

#include <sys/mman.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "common/scoped_perf_event_open.h"
#include "os/slowtier_mailbox.h"
#include "sampler/emulated_pmu.h"
#include "sampler/pmu_sampler.h"

namespace sentinel::slowtier {
namespace {

using emulated_pmu::AddressRange;
using emulated_pmu::EventKind;

// The plugin's side of a marked store: the store happens, then the callback sees its page.
EmulatedPmuOs in_process_plugin(PmuRegistry* registry, int* foreign_stores = nullptr) {
  EmulatedPmuOs os;
  os.marked_store = [registry, foreign_stores](volatile uint64_t* slot, uint64_t value) {
    *slot = value;
    const auto vaddr = reinterpret_cast<uint64_t>(slot);
    auto* page = reinterpret_cast<unsigned char*>(vaddr & ~uint64_t{4095});
    if (!registry->on_marked_store(vaddr, page) && foreign_stores != nullptr) ++*foreign_stores;
  };
  return os;
}

struct Access {
  uint64_t addr, clock;
  int kind;
  uint32_t cpu;
};

std::vector<Access> drain(EmulatedPmu& pmu) {
  std::vector<Access> out;
  pmu.drain([&](const PerfSample& s) {
    out.push_back(Access{s.addr, s.stream_id, access_kind_from_data_src(s.data_src), s.cpu});
  });
  return out;
}

TEST(EmulatedPmu, TheRealMarkedStoreBeginsWithThePluginsMarker) {
  const auto* code = static_cast<const unsigned char*>(real_marked_store_code());
  EXPECT_EQ(std::memcmp(code, kMarkerInsn, sizeof kMarkerInsn), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(code) % 64, 0u);  // a block of its own, off any page boundary
}

TEST(EmulatedPmu, WithoutThePluginNothingAnswers) {
  EmulatedPmu pmu;  // the real marked store: on this host the marker is a plain NOP
  const Status r = pmu.probe();
  EXPECT_FALSE(r.is_ok());
  EXPECT_EQ(r.sys_errno(), ENODEV);
  EXPECT_NE(std::string(r.message()).find("no slow-tier plugin answered"), std::string::npos) << r.message();
  EmulatedPmuOptions opt;
  opt.ranges = {AddressRange{0x10000, 0x20000}};
  opt.ring_bytes = 4096;
  EXPECT_FALSE(pmu.start(opt).is_ok());
  EXPECT_FALSE(pmu.started());
  EXPECT_EQ(pmu.drain(nullptr), 0u);
}

TEST(EmulatedPmu, SamplesTheRegisteredRangesWithTheStepClock) {
  PmuRegistry registry(80, 305);
  int foreign = 0;
  EmulatedPmu pmu(in_process_plugin(&registry, &foreign));
  ASSERT_TRUE(pmu.probe().is_ok());
  EXPECT_FALSE(registry.active());
  EmulatedPmuOptions opt;
  opt.ranges = {AddressRange{0x100000, 0x200000}, AddressRange{0x400000, 0x401000}};
  opt.ring_bytes = 16 * 4096;
  const Status r = pmu.start(opt);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_TRUE(registry.active());
  uint64_t* clock = pmu.step_clock();
  ASSERT_NE(clock, nullptr);

  *clock = 5;
  registry.on_event(0, 0x100000, EventKind::kLoadMiss, 0, 100);
  registry.on_event(1, 0x1fffc0, EventKind::kStoreMiss, 1, 200);
  registry.on_event(0, 0x0fffc0, EventKind::kLoadMiss, 0, 300);         // below the first range
  registry.on_event(0, 0x200000, EventKind::kLoadMiss, 0, 300);         // at its end
  registry.on_event(0, 0x300000, EventKind::kLoadMiss, 0, 300);         // between the ranges
  registry.on_event(0, 0xffff888000400000, EventKind::kLoadMiss, 0, 300);  // a kernel address
  *clock = 6;
  registry.on_event(1, 0x400040, EventKind::kWriteback, 1, 400);
  const auto got = drain(pmu);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].addr, 0x100000u);
  EXPECT_EQ(got[0].clock, 5u);
  EXPECT_EQ(got[0].kind, 0);
  EXPECT_EQ(got[1].addr, 0x1fffc0u);
  EXPECT_EQ(got[1].kind, 1);
  EXPECT_EQ(got[1].cpu, 1u);
  EXPECT_EQ(got[2].addr, 0x400040u);
  EXPECT_EQ(got[2].clock, 6u);
  EXPECT_EQ(got[2].kind, 2);
  EXPECT_EQ(pmu.counts().events_in_ranges, 3u);
  EXPECT_EQ(foreign, 0);
  EXPECT_EQ(pmu.stats().samples, 3u);

  // Many drains, wrapping the ring several times; nothing lost while the reader keeps up.
  uint64_t n = 0;
  for (int round = 0; round < 50; ++round) {
    *clock = 100 + round;
    for (int i = 0; i < 1000; ++i) registry.on_event(0, 0x100000 + 64 * (i % 4096), EventKind::kLoadMiss, 0, 1);
    for (const Access& a : drain(pmu)) {
      EXPECT_EQ(a.clock, 100u + round);
      ++n;
    }
  }
  EXPECT_EQ(n, 50000u);
  EXPECT_EQ(pmu.stats().lost, 0u);
  EXPECT_EQ(pmu.stats().corrupt, 0u);
  EXPECT_EQ(pmu.counts().publish_retries, 0u);

  pmu.stop();
  EXPECT_FALSE(registry.active());
  registry.on_event(0, 0x100000, EventKind::kLoadMiss, 0, 1);
  EXPECT_EQ(registry.totals().samples, 3u + 50000u);
}

// The step clock is the process's switch: while it is 0 the plugin takes no sample, so the process
// opens and closes sampling at an allocation event of its own, however late its service thread is.
TEST(EmulatedPmu, NothingIsSampledWhileTheStepClockIsZero) {
  PmuRegistry registry(80, 305);
  EmulatedPmu pmu(in_process_plugin(&registry));
  EmulatedPmuOptions opt;
  opt.ranges = {AddressRange{0x100000, 0x200000}};
  opt.ring_bytes = 4096;
  opt.sample_period = 2;
  ASSERT_TRUE(pmu.start(opt).is_ok());
  for (int i = 0; i < 10; ++i) registry.on_event(0, 0x100000, EventKind::kLoadMiss, 0, 1);
  *pmu.step_clock() = 3;
  for (int i = 0; i < 10; ++i) registry.on_event(0, 0x100040, EventKind::kLoadMiss, 0, 1);
  *pmu.step_clock() = 0;
  for (int i = 0; i < 10; ++i) registry.on_event(0, 0x100080, EventKind::kLoadMiss, 0, 1);
  const auto got = drain(pmu);
  ASSERT_EQ(got.size(), 5u);  // every 2nd of the 10 while the clock ran, none before or after
  for (const Access& a : got) {
    EXPECT_EQ(a.addr, 0x100040u);
    EXPECT_EQ(a.clock, 3u);
  }
  EXPECT_EQ(pmu.counts().events_in_ranges, 10u);
}

TEST(EmulatedPmu, EveryNthEventBecomesASample) {
  PmuRegistry registry(80, 305);
  EmulatedPmu pmu(in_process_plugin(&registry));
  EmulatedPmuOptions opt;
  opt.ranges = {AddressRange{0x100000, 0x200000}};
  opt.ring_bytes = 4096;
  opt.sample_period = 7;
  ASSERT_TRUE(pmu.start(opt).is_ok());
  *pmu.step_clock() = 1;
  for (int i = 0; i < 70; ++i) registry.on_event(0, 0x100000 + 64 * i, EventKind::kLoadMiss, 0, 1);
  registry.on_event(0, 0x900000, EventKind::kLoadMiss, 0, 1);  // outside: does not count towards the period
  const auto got = drain(pmu);
  ASSERT_EQ(got.size(), 10u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].addr, 0x100000 + 64 * (7 * i + 6));
}

TEST(EmulatedPmu, ASlowReaderLosesSamplesAndTheRingSaysHowMany) {
  PmuRegistry registry(80, 305);
  EmulatedPmu pmu(in_process_plugin(&registry));
  EmulatedPmuOptions opt;
  opt.ranges = {AddressRange{0x100000, 0x200000}};
  opt.ring_bytes = 4096;  // 85 records
  ASSERT_TRUE(pmu.start(opt).is_ok());
  *pmu.step_clock() = 1;
  for (int i = 0; i < 200; ++i) registry.on_event(0, 0x100000, EventKind::kLoadMiss, 0, 1);
  size_t got = drain(pmu).size();
  got += drain(pmu).size();
  EXPECT_EQ(got, 85u);
  EXPECT_EQ(pmu.stats().lost, 115u);
  EXPECT_EQ(pmu.counts().samples_dropped, 115u);
}

TEST(EmulatedPmu, AnUnmarkedPageIsNeverWrittenAndThePublishIsTriedAgain) {
  PmuRegistry registry(80, 305);
  int marks = 0;
  EmulatedPmuOs os = in_process_plugin(&registry);
  // The first page mark of every publish is lost (as when the store faulted and ran again unmarked).
  EmulatedPmuOs flaky;
  flaky.marked_store = [&](volatile uint64_t* slot, uint64_t value) {
    const bool page_mark = (reinterpret_cast<uint64_t>(slot) & 4095) != emulated_pmu::kControlOffset + 16;
    if (page_mark && marks++ % 3 == 0) {
      *slot = value;  // stored, but the plugin never saw the marker
      return;
    }
    os.marked_store(slot, value);
  };
  EmulatedPmu pmu(flaky);
  EmulatedPmuOptions opt;
  opt.ranges = {AddressRange{0x100000, 0x200000}};
  opt.ring_bytes = 4 * 4096;
  ASSERT_TRUE(pmu.start(opt).is_ok());
  *pmu.step_clock() = 1;
  for (int i = 0; i < 100; ++i) registry.on_event(0, 0x100000 + 64 * i, EventKind::kLoadMiss, 0, 1);
  const auto got = drain(pmu);
  ASSERT_EQ(got.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i].addr, 0x100000u + 64 * i);
  EXPECT_GE(pmu.counts().publish_retries, 1u);
  EXPECT_GE(registry.totals().missing_pages, 1u);
  EXPECT_EQ(pmu.stats().corrupt, 0u);
}

TEST(EmulatedPmu, RefusedRegistrationsAndForgottenTokens) {
  PmuRegistry registry(80, 305);
  EmulatedPmu pmu(in_process_plugin(&registry));
  EmulatedPmuOptions opt;
  opt.ring_bytes = 4096;
  opt.ranges = {AddressRange{0x200000, 0x100000}};  // empty range: the plugin refuses it
  Status r = pmu.start(opt);
  EXPECT_FALSE(r.is_ok());
  EXPECT_NE(std::string(r.message()).find("refused"), std::string::npos) << r.message();
  opt.ranges = {AddressRange{0x100000, uint64_t{1} << 48}};  // beyond user space
  EXPECT_FALSE(pmu.start(opt).is_ok());
  opt.ranges = {AddressRange{0x100000, 0x200000}};
  opt.ring_bytes = 3 * 4096;
  EXPECT_FALSE(pmu.start(opt).is_ok());  // not a power of two: refused before asking
  EXPECT_FALSE(registry.active());

  // More registrations than slots: the least recently used is forgotten; its owner reads nothing
  // more and its stop() is harmless.
  opt.ring_bytes = 4096;
  std::vector<std::unique_ptr<EmulatedPmu>> many;
  for (int i = 0; i <= PmuRegistry::kMaxRegistrations; ++i) {
    many.push_back(std::make_unique<EmulatedPmu>(in_process_plugin(&registry)));
    ASSERT_TRUE(many.back()->start(opt).is_ok()) << i;
    *many.back()->step_clock() = 1;
  }
  registry.on_event(0, 0x100040, EventKind::kLoadMiss, 0, 1);
  EXPECT_EQ(many[0]->drain(nullptr), 0u);
  for (int i = 1; i <= PmuRegistry::kMaxRegistrations; ++i) EXPECT_EQ(many[i]->drain(nullptr), 1u) << i;
  for (auto& p : many) p->stop();
  EXPECT_FALSE(registry.active());
}

// The PMU sampler with the emulated source: the same drain callback as the perf_event path.
TEST(EmulatedPmu, ThePmuSamplerReadsTheEmulatedRing) {
  PmuRegistry registry(80, 305);
  PmuSampler sampler(in_process_plugin(&registry));
  PmuSamplerOptions opt;
  opt.kind = SamplerKind::kPebs;
  opt.source = PmuSource::kEmulated;
  opt.sample_period = 1;
  opt.emulated_ring_bytes = 8 * 4096;
  opt.emulated_ranges = {AddressRange{0x100000, 0x200000}};
  ASSERT_TRUE(sampler.probe(opt).is_ok());
  ASSERT_TRUE(sampler.start(opt).is_ok());
  EXPECT_EQ(sampler.description(), "qemu-slowtier ring of 32 KiB, period 1");  // what "PMU sampler started: " logs
  EXPECT_EQ(sampler.threads(), 1u);
  EXPECT_TRUE(sampler.attach_thread(12345).is_ok());
  ASSERT_NE(sampler.step_clock(), nullptr);
  *sampler.step_clock() = 42;  // sampling on
  registry.on_event(0, 0x100080, EventKind::kWriteback, 1, 1);
  std::vector<PmuAccess> got;
  EXPECT_EQ(sampler.drain([&](const PmuAccess& a) { got.push_back(a); }), 1u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].addr, 0x100080u);
  EXPECT_EQ(got[0].kind, 2);
  EXPECT_EQ(got[0].step_clock, 42u);
  EXPECT_EQ(got[0].monotonic_ns, 0u);
  sampler.stop();
  EXPECT_EQ(sampler.step_clock(), nullptr);
  EXPECT_EQ(sampler.stats().samples, 1u);
  EXPECT_FALSE(registry.active());
}

TEST(EmulatedPmu, ChooseSamplerUsesThePluginOnlyForPebsOrWhenTold) {
  PmuRegistry registry(80, 305);
  const testing::FailingPerfEventOpen no_pmu(ENOENT);
  PmuSamplerOptions base;
  base.sysfs_pmu_root = "/nonexistent";
  const EmulatedPmuOs plugin = in_process_plugin(&registry);
  SamplerChoice c = choose_sampler("pebs", base, PmuSourceSetting::kAuto, plugin);
  EXPECT_EQ(c.kind, SamplerKind::kPebs);
  EXPECT_EQ(c.source, PmuSource::kEmulated);
  EXPECT_NE(c.reason.find("slow-tier"), std::string::npos) << c.reason;
  c = choose_sampler("auto", base, PmuSourceSetting::kAuto, plugin);  // unchanged: no plugin
  EXPECT_EQ(c.kind, SamplerKind::kSoftware);
  c = choose_sampler("auto", base, PmuSourceSetting::kEmulated, plugin);
  EXPECT_EQ(c.kind, SamplerKind::kPebs);
  EXPECT_EQ(c.source, PmuSource::kEmulated);
  c = choose_sampler("pebs", base, PmuSourceSetting::kPerf, plugin);
  EXPECT_EQ(c.kind, SamplerKind::kSoftware);
  c = choose_sampler("ibs", base, PmuSourceSetting::kAuto, plugin);  // the plugin emulates PEBS only
  EXPECT_EQ(c.kind, SamplerKind::kSoftware);
  // Without the plugin (the real marked store on the host), pebs falls back as before and says why.
  c = choose_sampler("pebs", base, PmuSourceSetting::kAuto, real_emulated_pmu_os());
  EXPECT_EQ(c.kind, SamplerKind::kSoftware);
  EXPECT_NE(c.reason.find("no slow-tier plugin answered"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("falling back to the software sampler"), std::string::npos) << c.reason;
}

}  // namespace
}  // namespace sentinel::slowtier
