// Unit tests of ProfileBuilder (src/profile/profile_builder.h): persistent objects, lifetimes on the
// step clock (including the wrap into the next step), averaging over the profiled steps, accesses
// outside a lifetime, derived tags, phase durations, and that every profile it builds passes
// validate_profile().
//
// Tests whose name starts with  describe behaviour the builder gets wrong today (see
// the comment on each); run them with --gtest_also_run_disabled_tests. They are disabled so the suite
// stays green until src/profile/profile_builder.cc is fixed; enable them with the fix.
#include "profile/profile_builder.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/hash.h"
#include "profile/profile_io.h"

namespace sentinel {
namespace {

constexpr uint64_t kMs = 1000000;

// Objects are looked up by tag; tags in these tests are small integers, sites are tag * 16.
const ObjectProfile* find(const StepProfile& p, uint64_t tag) {
  for (const auto& o : p.objects) {
    if (o.tag == tag) return &o;
  }
  return nullptr;
}

// The (reads, writes) recorded for a phase, or (-1, -1) when the object has no entry for it.
std::pair<int64_t, int64_t> access_at(const ObjectProfile& o, uint32_t phase) {
  for (const auto& a : o.accesses) {
    if (a.phase == phase) return {static_cast<int64_t>(a.reads), static_cast<int64_t>(a.writes)};
  }
  return {-1, -1};
}

StepProfile build_valid(const ProfileBuilder& b) {
  StepProfile p = b.build("software", 1, "test");
  std::string error;
  EXPECT_TRUE(validate_profile(p, &error)) << error;
  return p;
}

// A builder driven like the runtime drives it: events at 1 ms intervals, keys unique per instance.
struct Driver {
  ProfileBuilder b;
  uint64_t now = 1000 * kMs;
  uint64_t live = 0;
  Driver(uint32_t period, uint32_t steps) : b(period, steps) {}
  void alloc(uint64_t key, uint64_t tag, uint64_t size, uint32_t step, uint32_t event) {
    now += kMs;
    live += size;
    b.on_alloc(key, tag, tag * 16, 0, size, step, event, now, live);
  }
  void free(uint64_t key, uint64_t size, uint32_t step, uint32_t event) {
    live -= size;
    b.on_free(key, step, event, live);
  }
};

TEST(ProfileBuilder, PersistentObjectsSpanTheWholeStep) {
  Driver d(4, 2);
  d.b.add_persistent(/*key=*/100, /*tag=*/1, /*site=*/77, /*occurrence=*/3, 1 << 20);
  d.b.add_persistent(101, 2, 78, 0, 65536);
  for (uint32_t s = 0; s < 2; ++s) {
    for (uint32_t e = 0; e < 4; ++e) d.alloc(1000 + s * 10 + e, 10 + e, 65536, s, e);
    for (uint32_t e = 0; e < 4; ++e) d.free(1000 + s * 10 + e, 65536, s, 3);
  }
  d.b.on_alloc(9999, 10, 160, 0, 65536, 2, 0, d.now + kMs, 0);  // first event after the profile
  ASSERT_TRUE(d.b.has_complete_step());
  const StepProfile p = build_valid(d.b);
  const ObjectProfile* w = find(p, 1);
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->persistent);
  EXPECT_EQ(w->birth_phase, 0u);
  EXPECT_EQ(w->death_phase, 3u);
  EXPECT_EQ(w->size, 1u << 20);
  EXPECT_EQ(w->site, 77u);
  EXPECT_EQ(w->occurrence, 3u);
  ASSERT_NE(find(p, 2), nullptr);
  EXPECT_TRUE(find(p, 2)->persistent);
  // A persistent object freed during the profile (rare: a weight replaced) keeps its full-step life.
  d.b.on_free(100, 1, 2, 0);
  EXPECT_EQ(find(build_valid(d.b), 1)->death_phase, 3u);
  for (uint32_t e = 0; e < 4; ++e) EXPECT_FALSE(find(p, 10 + e)->persistent);
}

// Write-backs (the emulated PMU's) average like accesses; those of an object already dead, its
// dirty lines evicted after the free, count in its last phase.
TEST(ProfileBuilder, WritebacksAverageAndLateOnesCountInTheLastPhase) {
  Driver d(4, 2);
  for (uint32_t s = 0; s < 2; ++s) {
    const uint64_t key = 10 + s;
    d.alloc(key, 1, 65536, s, 0);  // born at event 0, freed in phase 1
    d.b.on_access(key, s, 0, 0, 1024, 0);
    d.alloc(20 + s, 2, 65536, s, 1);
    d.free(key, 65536, s, 1);
    d.b.on_access(key, s, 1, 100, 0, 200);
    d.b.on_access(key, s, 2, 0, 0, 800);  // evicted after the free
    d.alloc(30 + s, 3, 65536, s, 2);
    d.alloc(40 + s, 4, 65536, s, 3);
    d.free(20 + s, 65536, s, 3);
    d.free(30 + s, 65536, s, 3);
    d.free(40 + s, 65536, s, 3);
  }
  d.b.on_alloc(99, 1, 16, 0, 65536, 2, 0, d.now + kMs, 0);
  StepProfile p = d.b.build("pebs", 1, "test");
  p.writebacks_counted = true;
  std::string error;
  ASSERT_TRUE(validate_profile(p, &error)) << error;
  const ObjectProfile* o = find(p, 1);
  ASSERT_NE(o, nullptr);
  ASSERT_EQ(o->accesses.size(), 2u);
  EXPECT_EQ(o->accesses[0].writes, 1024u);
  EXPECT_EQ(o->accesses[0].writebacks, 0u);
  EXPECT_EQ(o->accesses[1].phase, 1u);
  EXPECT_EQ(o->accesses[1].reads, 100u);
  EXPECT_EQ(o->accesses[1].writebacks, 1000u);  // 200 in its phase + 800 after the free
}

TEST(ProfileBuilder, LifetimesOfStepLocalObjects) {
  Driver d(6, 1);
  d.alloc(1, 1, 65536, 0, 0);  // dies in phase 4
  d.alloc(2, 2, 65536, 0, 1);  // born and freed in phase 1
  d.free(2, 65536, 0, 1);
  d.alloc(3, 3, 65536, 0, 2);  // never freed in the run
  d.alloc(4, 4, 65536, 0, 3);
  d.alloc(5, 5, 65536, 0, 4);
  d.free(1, 65536, 0, 4);
  d.alloc(6, 6, 65536, 0, 5);  // freed in phase 0 of the next step: wraps
  d.alloc(7, 4, 65536, 1, 0);  // the next step (beyond the profile) still closes lifetimes
  d.free(6, 65536, 1, 0);
  d.free(4, 65536, 1, 2);      // born in phase 3, dies in phase 2 of the next step: death 6 + 2
  d.free(5, 65536, 3, 0);      // lives more than a step: clipped to birth + period - 1
  const StepProfile p = build_valid(d.b);
  auto life = [&](uint64_t tag) {
    const ObjectProfile* o = find(p, tag);
    return o == nullptr ? std::pair<int, int>{-1, -1} : std::pair<int, int>(o->birth_phase, o->death_phase);
  };
  EXPECT_EQ(life(1), (std::pair<int, int>{0, 4}));
  EXPECT_EQ(life(2), (std::pair<int, int>{1, 1}));
  EXPECT_EQ(life(3), (std::pair<int, int>{2, 5}));  // never freed: alive to the step end
  EXPECT_EQ(life(4), (std::pair<int, int>{3, 8}));
  EXPECT_EQ(life(5), (std::pair<int, int>{4, 9}));
  EXPECT_EQ(life(6), (std::pair<int, int>{5, 6}));
  EXPECT_EQ(find(p, 6)->lifetime_phases(), 2u);
  EXPECT_EQ(p.objects.size(), 6u);  // the allocation after the profile adds no object
}

TEST(ProfileBuilder, CountsAreAveragedOverTheProfiledSteps) {
  Driver d(3, 2);
  d.b.add_persistent(50, 50, 1, 0, 1 << 20);
  for (uint32_t s = 0; s < 2; ++s) {
    const uint64_t key = 10 + s;
    d.alloc(key, 1, 65536 + s * 4096, s, 0);
    d.alloc(20 + s, 2, 65536, s, 1);
    // Step-local object 1: 100 reads in step 0, 300 in step 1, writes only in step 1.
    d.b.on_access(key, s, 0, s == 0 ? 100 : 300, s == 0 ? 0 : 40);
    // The persistent object is touched in phase 1 of step 0 only: its mean is half of it.
    if (s == 0) d.b.on_access(50, s, 1, 80, 20);
    d.alloc(30 + s, 3, 65536, s, 2);
    d.free(key, 65536, s, 2);
    d.free(20 + s, 65536, s, 2);
    d.free(30 + s, 65536, s, 2);
  }
  d.b.on_profile_end(d.now + kMs);
  const StepProfile p = build_valid(d.b);
  EXPECT_EQ(p.profiled_steps, 2u);
  const ObjectProfile* o = find(p, 1);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(access_at(*o, 0), (std::pair<int64_t, int64_t>{200, 20}));
  EXPECT_EQ(o->size, 65536u + 4096u);  // the largest instance
  EXPECT_EQ(access_at(*find(p, 50), 1), (std::pair<int64_t, int64_t>{40, 10}));
  EXPECT_TRUE(find(p, 2)->accesses.empty());
  EXPECT_EQ(find(p, 1)->total_accesses(), 220u);
}

TEST(ProfileBuilder, AccessesOutsideTheLifetimeAreDropped) {
  Driver d(5, 1);
  d.alloc(1, 1, 65536, 0, 0);
  d.alloc(2, 2, 65536, 0, 1);  // alive in phases 1..2
  d.alloc(3, 3, 65536, 0, 2);
  d.b.on_access(2, 0, 0, 7, 0);  // before its birth (a late harvest of the phase before)
  d.b.on_access(2, 0, 1, 5, 0);
  d.b.on_access(2, 0, 2, 6, 0);
  d.b.on_access(2, 0, 4, 9, 0);  // after its death (the key is still live in the builder)
  d.free(2, 65536, 0, 2);
  d.b.on_access(2, 0, 3, 9, 9);  // after the free: the key is gone
  d.alloc(4, 4, 65536, 0, 3);     // wraps: born 3, freed in phase 1 of the next step
  d.b.on_access(4, 0, 3, 1, 0);
  d.b.on_access(4, 0, 0, 2, 0);  // phase 0 is inside the wrapped lifetime (3,4,0,1)
  d.b.on_access(4, 0, 2, 3, 0);  // phase 2 is not
  d.alloc(5, 5, 65536, 0, 4);
  d.b.on_access(5, 1, 4, 1, 1);     // a step beyond the profile is ignored
  d.b.on_access(5, 0, 5, 1, 1);     // a phase beyond the period is ignored
  d.b.on_access(12345, 0, 4, 1, 1); // an unknown key is ignored
  d.alloc(6, 1, 65536, 1, 0);
  d.free(4, 65536, 1, 1);
  const StepProfile p = build_valid(d.b);
  const ObjectProfile* o2 = find(p, 2);
  ASSERT_EQ(o2->accesses.size(), 2u);
  EXPECT_EQ(access_at(*o2, 1).first, 5);
  EXPECT_EQ(access_at(*o2, 2).first, 6);
  const ObjectProfile* o4 = find(p, 4);
  EXPECT_EQ(o4->death_phase, 6u);
  ASSERT_EQ(o4->accesses.size(), 2u);
  EXPECT_EQ(o4->accesses[0].phase, 0u);  // sorted by phase
  EXPECT_EQ(o4->accesses[1].phase, 3u);
  EXPECT_TRUE(find(p, 5)->accesses.empty());
}

TEST(ProfileBuilder, StepLocalObjectWithAPersistentObjectsTagGetsADerivedTag) {
  Driver d(3, 2);
  d.b.add_persistent(1, 42, 42 * 16, 0, 1 << 20);  // e.g. a gradient kept from the first step
  for (uint32_t s = 0; s < 2; ++s) {
    d.alloc(10 + s, 42, 65536, s, 0);  // same call-site and occurrence, allocated in every step
    d.b.on_access(10 + s, s, 0, 10, 0);
    d.b.on_access(1, s, 0, 4, 0);
    d.alloc(20 + s, 7, 65536, s, 1);
    d.free(10 + s, 65536, s, 1);
    d.alloc(30 + s, 8, 65536, s, 2);
    d.free(20 + s, 65536, s, 2);
    d.free(30 + s, 65536, s, 2);
  }
  d.b.on_profile_end(d.now + kMs);
  const StepProfile p = build_valid(d.b);
  const uint64_t derived = derived_tag(42);
  EXPECT_NE(derived, 42u);
  EXPECT_EQ(derived, derived_tag(42));  // stable across runs and steps
  const ObjectProfile* persistent = find(p, 42);
  const ObjectProfile* local = find(p, derived);
  ASSERT_NE(persistent, nullptr);
  ASSERT_NE(local, nullptr);
  EXPECT_TRUE(persistent->persistent);
  EXPECT_EQ(persistent->size, 1u << 20);
  EXPECT_FALSE(local->persistent);
  EXPECT_EQ(local->size, 65536u);
  EXPECT_EQ(local->birth_phase, 0u);
  EXPECT_EQ(local->death_phase, 1u);
  EXPECT_EQ(local->site, 42u * 16);  // the site is kept, only the tag changes
  EXPECT_EQ(access_at(*local, 0).first, 10);
  EXPECT_EQ(access_at(*persistent, 0).first, 4);
  EXPECT_EQ(p.objects.size(), 4u);
}

TEST(ProfileBuilder, PhaseDurationsStepTimeAndPeak) {
  ProfileBuilder b(3, 2);
  // Step 0: events at 0, 10, 30 ms; step 1: 60, 64, 80 ms; the profile ends at 100 ms (event 0 of step 2).
  const uint64_t t0 = 5000 * kMs;
  const uint64_t times[2][3] = {{0, 10, 30}, {60, 64, 80}};
  uint64_t key = 1;
  for (uint32_t s = 0; s < 2; ++s) {
    for (uint32_t e = 0; e < 3; ++e) {
      b.on_alloc(key, 100 + e, 1, 0, 65536, s, e, t0 + times[s][e] * kMs, (e + 1) * 65536 + s * 1000);
      ++key;
    }
  }
  EXPECT_FALSE(b.has_complete_step());
  b.on_alloc(key, 100, 1, 0, 65536, 2, 0, t0 + 100 * kMs, 65536);  // closes the profile
  EXPECT_TRUE(b.has_complete_step());
  b.on_profile_end(t0 + 999 * kMs);  // a second end changes nothing
  const StepProfile p = build_valid(b);
  ASSERT_EQ(p.phases.size(), 3u);
  EXPECT_EQ(p.phases[0].duration_ns, (10 + 4) * kMs / 2);
  EXPECT_EQ(p.phases[1].duration_ns, (20 + 16) * kMs / 2);
  EXPECT_EQ(p.phases[2].duration_ns, (30 + 20) * kMs / 2);
  EXPECT_EQ(p.step_time_ns, 50 * kMs);
  EXPECT_EQ(p.peak_object_bytes, 3u * 65536 + 1000);
  EXPECT_EQ(p.profiled_steps, 2u);
  EXPECT_EQ(p.period, 3u);
  EXPECT_EQ(p.sampler, "software");
  EXPECT_EQ(p.program, "test");
  uint64_t sum = 0;
  for (const auto& ph : p.phases) sum += ph.duration_ns;
  EXPECT_EQ(sum, p.step_time_ns);
}

TEST(ProfileBuilder, ProfileEndedEarlyCountsTheStepsSeen) {
  ProfileBuilder b(2, 4);  // four steps asked for, the program exits during the second
  b.on_alloc(1, 1, 1, 0, 65536, 0, 0, 10 * kMs, 65536);
  b.on_alloc(2, 2, 1, 1, 65536, 0, 1, 12 * kMs, 131072);
  b.on_alloc(3, 1, 1, 0, 65536, 1, 0, 20 * kMs, 131072);
  b.on_profile_end(26 * kMs);
  const StepProfile p = build_valid(b);
  EXPECT_EQ(p.profiled_steps, 2u);
  EXPECT_EQ(p.step_time_ns, 8 * kMs);
  EXPECT_EQ(p.phases[0].duration_ns, (2 + 6) * kMs / 2);
  EXPECT_EQ(p.phases[1].duration_ns, 8 * kMs / 2);
}

// Random but valid event streams (births, frees possibly in later steps, accesses in any phase,
// persistent objects, tag collisions): whatever arrives, build() must produce a valid profile.
TEST(ProfileBuilder, BuildOutputAlwaysPassesValidation) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const uint32_t period = 1 + rng() % 12;
    const uint32_t steps = 1 + rng() % 3;
    ProfileBuilder b(period, steps);
    std::vector<uint64_t> live;
    uint64_t next_key = 1, t = 1;
    const uint32_t persistent = rng() % 4;
    for (uint32_t i = 0; i < persistent; ++i) {
      b.add_persistent(next_key, rng() % 6, 1, 0, 65536 * (1 + rng() % 4));
      live.push_back(next_key++);
    }
    for (uint32_t s = 0; s <= steps; ++s) {
      for (uint32_t e = 0; e < period; ++e) {
        t += 1 + rng() % 1000;
        b.on_alloc(next_key, rng() % 8, 1, e, 65536 + rng() % 100000, s, e, t, rng() % (1 << 30));
        live.push_back(next_key++);
        for (int k = rng() % 4; k > 0; --k) {
          b.on_access(live[rng() % live.size()], s, rng() % (period + 1), rng() % 1000, rng() % 1000);
        }
        if (!live.empty() && rng() % 2 == 0) {
          const size_t victim = rng() % live.size();
          b.on_free(live[victim], s, e, 0);
          live.erase(live.begin() + static_cast<long>(victim));
        }
      }
    }
    const StepProfile p = b.build("software", 1, "fuzz");
    std::string error;
    ASSERT_TRUE(validate_profile(p, &error)) << "seed " << seed << ": " << error;
  }
}

// KNOWN BUG 1. The runtime reports a phase's sampled accesses when the phase ends (at the next
// allocation event), so an object freed during a phase has already been passed to on_free() when its
// accesses for that phase arrive. on_access() only looks in the live instances and drops them: an
// object's accesses in its death phase are never recorded. That phase is usually where its last use
// is (an activation read by the backward pass and freed right after; a temporary used and freed in
// one phase), so the profile says such objects are not used when they die.
TEST(ProfileBuilder, AccessesInTheDeathPhaseReportedAtThePhaseEndAreKept) {
  Driver d(3, 1);
  d.alloc(1, 1, 65536, 0, 0);
  d.alloc(2, 2, 65536, 0, 1);  // a temporary: allocated, used and freed in phase 1
  d.free(2, 65536, 0, 1);
  d.b.on_access(2, 0, 1, 0, 1024);  // harvested at the next event, after the free was seen
  d.alloc(3, 3, 65536, 0, 2);
  d.b.on_profile_end(d.now + kMs);
  const StepProfile p = build_valid(d.b);
  EXPECT_EQ(access_at(*find(p, 2), 1), (std::pair<int64_t, int64_t>{0, 1024}));
}

// KNOWN BUG 2. Every object alive when profiling starts is taken as persistent. An object of the
// previous (warm-up) step that is still alive at the first event of the profiled step (PyTorch's
// input batch `x` is freed only when the next batch replaces it; any object born late in a step and
// freed early in the next) is recorded as a persistent object of its tag, and the same tensor of the
// profiled steps then gets a derived tag. The profile then holds a phantom persistent object (its
// bytes counted as resident all step long), and the wrapped part of the real object's lifetime
// misses the first step's accesses, so its averaged counts there are too low.
TEST(ProfileBuilder, ObjectOfTheWarmupStepFreedDuringTheProfileIsNotPersistent) {
  Driver d(4, 2);
  // Tag 9 is born in phase 3 of every step, read in phase 0 of the next step and freed in phase 1.
  // Keys: 400 + s for the instance born in step s; 399 is the warm-up step's instance.
  d.b.add_persistent(/*key=*/399, /*tag=*/9, 9 * 16, 0, 65536);
  d.b.add_persistent(/*key=*/6, /*tag=*/1, 16, 0, 1 << 20);  // a real weight
  for (uint32_t s = 0; s < 2; ++s) {
    d.alloc(100 + s, 2, 65536, s, 0);
    d.b.on_access(399 + s, s, 0, 100, 0);  // the previous step's instance, read in phase 0
    d.alloc(200 + s, 3, 65536, s, 1);
    d.free(399 + s, 65536, s, 1);           // and freed in phase 1
    d.alloc(300 + s, 4, 65536, s, 2);
    d.alloc(400 + s, 9, 65536, s, 3);       // this step's instance
    d.free(100 + s, 65536, s, 3);
    d.free(200 + s, 65536, s, 3);
    d.free(300 + s, 65536, s, 3);
  }
  d.b.on_alloc(999, 2, 32, 0, 65536, 2, 0, d.now + kMs, 0);
  d.free(401, 65536, 2, 1);
  const StepProfile p = build_valid(d.b);
  const ObjectProfile* o = find(p, 9);
  ASSERT_NE(o, nullptr);
  EXPECT_FALSE(o->persistent);
  EXPECT_EQ(o->birth_phase, 3u);
  EXPECT_EQ(o->death_phase, 4u + 1u);
  EXPECT_EQ(access_at(*o, 0).first, 100);
  EXPECT_EQ(find(p, derived_tag(9)), nullptr);
  ASSERT_NE(find(p, 1), nullptr);
  EXPECT_TRUE(find(p, 1)->persistent);
}

// The step detector takes an evaluation pass that starts with the anchor call-site for the step's start,
// then begins the step over at the training's anchor: the pass's births leave the profile, and so does the
// time it took.
TEST(ProfileBuilder, AStepBegunOverDropsTheBirthsAndTimesOfItsFalseStart) {
  Driver d(3, 2);
  d.b.add_persistent(50, 50, 50 * 16, 0, 1 << 20);
  d.alloc(1, 7, 65536, 0, 0);  // the evaluation pass: tags 7 and 8, 1 ms apart
  d.alloc(2, 8, 65536, 0, 1);
  d.free(1, 65536, 0, 1);
  d.b.on_access(2, 0, 1, 500, 0);
  d.now += 40 * kMs;  // the pass's last phase: 41 ms
  d.b.begin_step_over(0, d.now);
  for (uint32_t s = 0; s < 2; ++s) {
    for (uint32_t e = 0; e < 3; ++e) d.alloc(10 * (s + 1) + e, 20 + e, 65536, s, e);
    for (uint32_t e = 0; e < 3; ++e) d.free(10 * (s + 1) + e, 65536, s, 2);
  }
  d.free(2, 65536, 1, 2);  // the pass's object, freed late: no longer in the profile
  d.b.on_profile_end(d.now + kMs);
  const StepProfile p = build_valid(d.b);
  EXPECT_EQ(find(p, 7), nullptr);
  EXPECT_EQ(find(p, 8), nullptr);
  ASSERT_NE(find(p, 20), nullptr);
  ASSERT_NE(find(p, 50), nullptr);
  EXPECT_EQ(p.objects.size(), 4u);
  for (uint32_t e = 0; e < 3; ++e) EXPECT_EQ(p.phases[e].duration_ns, kMs) << "phase " << e;
  EXPECT_EQ(p.step_time_ns, 3 * kMs);
}

// Begun over in a later profiled step, a false start whose tags the training also makes: the tag keeps
// the instances of the other steps, and its lifetime is the training's, not the dropped instance's.
TEST(ProfileBuilder, AFalseStartLaterKeepsTheTagsOfTheOtherSteps) {
  Driver d(3, 2);
  for (uint32_t e = 0; e < 3; ++e) d.alloc(10 + e, 20 + e, 65536, 0, e);
  d.free(10, 65536, 0, 2);
  d.free(12, 65536, 0, 2);       // step 0's tag 21 (key 11) lives on into step 1
  d.alloc(30, 21, 65536, 1, 0);  // the false start: tag 21, dead at once, and one of its own (9)
  d.free(30, 65536, 1, 0);
  d.alloc(31, 9, 65536, 1, 1);
  d.b.begin_step_over(1, d.now);
  d.alloc(40, 20, 65536, 1, 0);
  d.free(11, 65536, 1, 0);  // step 0's tag 21 dies: born at 1, dead at 0 of the next step
  d.alloc(41, 21, 65536, 1, 1);
  d.alloc(42, 22, 65536, 1, 2);
  d.free(40, 65536, 1, 2);
  d.free(42, 65536, 1, 2);
  d.alloc(60, 20, 65536, 2, 0);  // closes the profile
  d.free(41, 65536, 2, 0);
  const StepProfile p = build_valid(d.b);
  EXPECT_EQ(find(p, 9), nullptr);
  const ObjectProfile* o = find(p, 21);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->birth_phase, 1u);
  EXPECT_EQ(o->death_phase, 3u);
  EXPECT_EQ(p.objects.size(), 3u);
}

// A step that deviates at its first event is left out: the phase before it ends there, and the next step,
// profiled in its place, starts the clock again.
TEST(ProfileBuilder, AStepLeftOutAtItsFirstEventEndsThePhaseBeforeIt) {
  Driver d(2, 2);
  d.alloc(1, 20, 65536, 0, 0);
  d.alloc(2, 21, 65536, 0, 1);
  d.free(1, 65536, 0, 1);
  d.free(2, 65536, 0, 1);
  d.now += kMs;  // phase 1: 2 ms
  d.b.begin_step_over(1, d.now + kMs);
  d.now += 50 * kMs;  // the step left out
  d.alloc(3, 20, 65536, 1, 0);
  d.alloc(4, 21, 65536, 1, 1);
  d.free(3, 65536, 1, 1);
  d.free(4, 65536, 1, 1);
  d.b.on_profile_end(d.now + 2 * kMs);
  const StepProfile p = build_valid(d.b);
  EXPECT_EQ(p.phases[0].duration_ns, kMs);
  EXPECT_EQ(p.phases[1].duration_ns, 2 * kMs);
  EXPECT_EQ(p.step_time_ns, 3 * kMs);
  EXPECT_EQ(p.profiled_steps, 2u);
}

}  // namespace
}  // namespace sentinel
