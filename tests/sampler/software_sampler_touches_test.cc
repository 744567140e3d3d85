// The software sampler's touches stamped with the program's clock (WindowTouch, take_touches) and add(),
// which arms new regions without re-arming the others: what the profiler uses to put each pass in the
// phase it happened in however late its service thread looks (preload/profiler_sampling.cc).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sampler/software_sampler.h"
#include "sampler_test_mappings.h"

namespace sentinel {
namespace {

using namespace sampler_test;

bool inside(const WindowTouch& t, const Mapping& m) {
  return t.addr >= reinterpret_cast<uintptr_t>(m.base) && t.addr < reinterpret_cast<uintptr_t>(m.base) + m.len;
}

TEST(SoftwareSamplerTouches, EachTouchCarriesTheClockOfItsMoment) {
  Mapping a(8), b(8);
  ASSERT_TRUE(a.base && b.base);
  write_all(a.base, a.len, 1);
  write_all(b.base, b.len, 1);
  uint64_t clock = 5;
  SoftwareSamplerOptions opt;
  opt.clock = &clock;
  SoftwareSampler s;
  ASSERT_TRUE(s.start(opt, nullptr));
  ASSERT_EQ(s.arm({region_of(a, 0), region_of(b, 1)}, 0), 2u);
  write_all(a.base, a.len, 2);  // a: a write pass at clock 5
  clock = 9;
  EXPECT_EQ(read_all(b.base, b.len), b.len / 64);  // b: a read pass at clock 9
  std::vector<WindowTouch> got;
  s.take_touches(&got);
  EXPECT_TRUE(got.empty()) << "a touch is handed out when its cycle closes, not before";
  s.rearm();
  clock = 12;
  (void)read_all(a.base, a.len);  // a again: a read pass, then a write in the same cycle
  write_all(a.base, a.len, 3);
  s.disarm();
  s.take_touches(&got);
  ASSERT_EQ(got.size(), 3u);
  int a_write = 0, a_dirty_read = 0, b_read = 0;
  for (const WindowTouch& t : got) {
    if (t.slot == 0 && t.clock == 5 && t.write && t.dirtied && inside(t, a)) ++a_write;
    if (t.slot == 0 && t.clock == 12 && !t.write && t.dirtied && inside(t, a)) ++a_dirty_read;
    if (t.slot == 1 && t.clock == 9 && !t.write && !t.dirtied && inside(t, b)) ++b_read;
  }
  EXPECT_EQ(a_write, 1);
  EXPECT_EQ(a_dirty_read, 1);
  EXPECT_EQ(b_read, 1);
  got.clear();
  s.take_touches(&got);
  EXPECT_TRUE(got.empty()) << "each touch is handed out once";
  for (size_t i = 0; i < a.len; i += 64) ASSERT_EQ(a.base[i], 3);
  s.stop();
}

TEST(SoftwareSamplerTouches, AddArmsOnlyNewRegionsAndLeavesTheOthersAsTheyAre) {
  Mapping a(8), b(8), c(8);
  ASSERT_TRUE(a.base && b.base && c.base);
  uint64_t clock = 1;
  SoftwareSamplerOptions opt;
  opt.clock = &clock;
  SoftwareSampler s;
  ASSERT_TRUE(s.start(opt, nullptr));
  ASSERT_EQ(s.arm({region_of(a, 0), region_of(b, 1)}, 0), 2u);
  write_all(a.base, a.len, 1);  // a's window is touched: restored until the next rearm
  EXPECT_EQ(s.stats().armed_now, 1u);
  clock = 2;
  // c is new; a and b already have windows and keep them (no second window, not counted as duplicates).
  EXPECT_EQ(s.add({region_of(a, 0), region_of(b, 1), region_of(c, 2)}, 0), 1u);
  EXPECT_EQ(s.stats().armed_now, 2u);        // b still armed, c armed; a not re-protected by add()
  EXPECT_EQ(s.stats().windows_armed, 3u);    // one mprotect(PROT_NONE) for c
  EXPECT_EQ(s.stats().skipped_duplicate, 0u);
  clock = 3;
  write_all(b.base, b.len, 1);
  write_all(c.base, c.len, 1);
  write_all(a.base, a.len, 2);  // a is open: no fault
  EXPECT_EQ(s.stats().faults_claimed, 3u);
  s.disarm();
  std::vector<WindowTouch> got;
  s.take_touches(&got);
  ASSERT_EQ(got.size(), 3u);
  for (const WindowTouch& t : got) EXPECT_EQ(t.clock, t.slot == 0 ? 1u : 3u) << "slot " << t.slot;
  s.stop();
}

TEST(SoftwareSamplerTouches, AddGivesAReleasedSlotANewWindowAndKeepsItsLastTouch) {
  // An object dies after a touch (its window restored, then released) and a new one takes its slot at
  // another address before the next rearm: the old touch is kept, the new object gets a window.
  Mapping a(8), b(8);
  ASSERT_TRUE(a.base && b.base);
  uint64_t clock = 4;
  SoftwareSamplerOptions opt;
  opt.clock = &clock;
  SoftwareSampler s;
  ASSERT_TRUE(s.start(opt, nullptr));
  ASSERT_EQ(s.arm({SampleRegion{reinterpret_cast<uintptr_t>(a.base), a.len, 3, s.release_ticket(3)}}, 0), 1u);
  write_all(a.base, a.len, 1);
  s.release(3);
  clock = 6;
  EXPECT_EQ(s.add({SampleRegion{reinterpret_cast<uintptr_t>(b.base), b.len, 3, s.release_ticket(3)}}, 0), 1u);
  (void)read_all(b.base, b.len);
  s.disarm();
  std::vector<WindowTouch> got;
  s.take_touches(&got);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].clock == 4 && got[0].write && inside(got[0], a));
  EXPECT_TRUE(got[1].clock == 6 && !got[1].write && inside(got[1], b));
  s.stop();
}

TEST(SoftwareSamplerTouches, AddSkipsARegionReleasedBeforeItsWindowIsPublished) {
  Mapping a(8);
  ASSERT_TRUE(a.base);
  SoftwareSampler s;
  ASSERT_TRUE(s.start({}, nullptr));
  const uint64_t ticket = s.release_ticket(1);
  s.release(1);  // freed between the owner's liveness check and add()
  EXPECT_EQ(s.add({SampleRegion{reinterpret_cast<uintptr_t>(a.base), a.len, 1, ticket}}, 0), 0u);
  EXPECT_EQ(s.stats().armed_now, 0u);
  write_all(a.base, a.len, 1);  // no page protected
  s.stop();
}

TEST(SoftwareSamplerTouches, ArmBirthSeesTheFirstPassAndTheWindowIsTheOwnersAfterIt) {
  Mapping a(8);
  ASSERT_TRUE(a.base);
  uint64_t clock = 7;
  SoftwareSamplerOptions opt;
  opt.clock = &clock;
  opt.birth_windows = 2;
  SoftwareSampler s;
  ASSERT_TRUE(s.start(opt, nullptr));
  ASSERT_TRUE(s.arm_birth(SampleRegion{reinterpret_cast<uintptr_t>(a.base), a.len, 5, s.release_ticket(5)}));
  EXPECT_EQ(s.stats().armed_now, 1u);
  EXPECT_EQ(s.stats().births_armed, 1u);
  write_all(a.base, a.len, 1);  // the program's first pass: a write at clock 7
  s.rearm();                    // the owner protects it again, in place
  EXPECT_EQ(s.stats().armed_now, 1u);
  clock = 9;
  EXPECT_EQ(read_all(a.base, a.len), a.len / 64);
  // add() leaves a slot with a birth window alone.
  EXPECT_EQ(s.add({SampleRegion{reinterpret_cast<uintptr_t>(a.base), a.len, 5, s.release_ticket(5)}}, 0), 0u);
  s.release(5);  // freed: nothing protected
  EXPECT_EQ(s.stats().armed_now, 0u);
  s.disarm();
  std::vector<WindowTouch> got;
  s.take_touches(&got);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].clock == 7 && got[0].write && got[0].slot == 5);
  EXPECT_TRUE(got[1].clock == 9 && !got[1].write);
  // Two birth entries: a third birth finds none free and is not armed.
  Mapping b(2), c(2), d(2);
  ASSERT_TRUE(s.arm_birth(region_of(b, 1)));
  ASSERT_TRUE(s.arm_birth(region_of(c, 2)));
  EXPECT_FALSE(s.arm_birth(region_of(d, 3)));
  EXPECT_EQ(s.stats().births_skipped, 1u);
  s.stop();  // restores both
  write_all(b.base, b.len, 1);
  write_all(c.base, c.len, 1);
  EXPECT_FALSE(s.arm_birth(region_of(d, 3))) << "a stopped sampler arms no birth";
  write_all(d.base, d.len, 1);
}

TEST(SoftwareSamplerTouches, BirthsOnManyThreadsWhileTheOwnerAddsRearmsAndDisarms) {
  // Three threads allocate in miniature: arm_birth, write, check, read, release, over their own objects;
  // the owner meanwhile closes cycles (rearm), reclaims released entries (add) and disarms now and then.
  // Every object's data must be what its thread wrote, and no page may stay protected after its release
  // or after the stop.
  constexpr int kThreads = 3, kObjects = 16, kRounds = 3000;
  uint64_t clock = 1;
  SoftwareSamplerOptions opt;
  opt.clock = &clock;
  opt.birth_windows = 32;
  SoftwareSampler s;
  ASSERT_TRUE(s.start(opt, nullptr));
  std::vector<std::unique_ptr<Mapping>> maps;
  for (int i = 0; i < kThreads * kObjects; ++i) maps.push_back(std::make_unique<Mapping>(4));
  std::atomic<int> running{kThreads}, bad_data{0}, protected_after_release{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      const int fd = memfd_create("sampler-births", 0);
      for (int round = 0; round < kRounds; ++round) {
        const int i = th * kObjects + round % kObjects;
        Mapping& m = *maps[i];
        const uint32_t slot = static_cast<uint32_t>(i);
        s.arm_birth(SampleRegion{reinterpret_cast<uintptr_t>(m.base), m.len, slot, s.release_ticket(slot)});
        const char v = static_cast<char>(1 + round % 100);
        write_all(m.base, m.len, v);
        if (read_all(m.base, m.len) != static_cast<uint64_t>(v) * (m.len / 64)) {
          bad_data.fetch_add(1);
        }
        s.release(slot);
        if (!kernel_can_read(fd, m.base, m.len)) protected_after_release.fetch_add(1);
      }
      close(fd);
      running.fetch_sub(1);
    });
  }
  std::vector<WindowTouch> got;
  for (int k = 0; running.load() > 0; ++k) {
    __atomic_add_fetch(&clock, 1, __ATOMIC_RELAXED);
    s.rearm();
    s.add({}, 0);
    if (k % 50 == 49) s.disarm();
    s.take_touches(&got);
  }
  for (std::thread& t : threads) t.join();
  s.stop();
  s.take_touches(&got);
  EXPECT_EQ(bad_data.load(), 0);
  EXPECT_EQ(protected_after_release.load(), 0);
  EXPECT_GT(s.stats().births_armed, 0u);
  EXPECT_GT(got.size(), 0u);
  const int fd = memfd_create("sampler-births-final", 0);
  for (const auto& m : maps) EXPECT_TRUE(kernel_can_read(fd, m->base, m->len));
  close(fd);
}

}  // namespace
}  // namespace sentinel
