// Room for a fast birth or a prefetch under a budget full of parked extents (preload/runtime.cc,
// make_fast_room; preload/migration.cc). Parked pages are dropped only when dropping them lets the birth
// fit: before, a birth that could not fit even with every parked page dropped dropped them all the same
// and went slow, and their class faulted them in again at its next birth. A prefetch takes its room when
// it starts, after the evictions queued ahead of it: before, it took it when queued, found the evictions'
// bytes still counted, and dropped parked pages for room that was about to be free. alloc_script (see
// there) under the preload, first-touch under a small bytes budget, a dry run (the slow node simulated,
// so the budget's placer and the migration engine run on one node).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../common/temp_dir.h"

namespace {

nlohmann::json run_script(const std::string& script, const char* budget = "4M", std::string* out = nullptr) {
  sentinel::testing::TempDir dir("sentinel-parked-room");
  EXPECT_TRUE(dir.ok());
  const std::string stats = dir.file("stats.json");
  // budget "": none (no pool parks its freed extents).
  const std::string budget_env = *budget == '\0' ? "" : "SENTINEL_FAST_BUDGET=" + std::string(budget) + " ";
  const std::string command = "env LD_PRELOAD=" SENTINEL_LIB " SENTINEL_MODE=track SENTINEL_DRY_RUN=1 " + budget_env +
                              "SENTINEL_STATS=" + stats + " " ALLOC_SCRIPT " " + script + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string output;
  char line[512];
  while (p != nullptr && std::fgets(line, sizeof line, p) != nullptr) output += line;
  EXPECT_EQ(p == nullptr ? -1 : pclose(p), 0) << output;
  if (out != nullptr) *out = output;
  std::ifstream in(stats);
  EXPECT_TRUE(in) << output;
  return nlohmann::json::parse(in, nullptr, false);
}

uint64_t get(const nlohmann::json& j, const char* key) { return j.at(key).get<uint64_t>(); }

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

TEST(ParkedRoom, ParkedPagesThatCannotMakeRoomAreKeptForTheirClass) {
  // 3 MiB live and 512 KiB parked: a 2 MiB birth cannot fit (1.5 MiB short, 512 KiB parked) and goes
  // slow; the parked extent is then still there for the next 512 KiB birth.
  const nlohmann::json j = run_script("a0=3M a1=512K f1 a2=2M a3=512K");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "extents_trimmed"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "parked_fast_reuses"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "forced_slow_allocations"), 1u) << j.dump(1);
  // Only the first two objects faulted their pages in on the fast node; the reused one did not.
  EXPECT_EQ(get(j, "empty_birth_bytes_fast"), 3 * kMiB + 512 * kKiB) << j.dump(1);
  EXPECT_EQ(get(j, "empty_birth_bytes_slow"), 2 * kMiB) << j.dump(1);
}

TEST(ParkedRoom, ParkedPagesAreDroppedWhereThatMakesRoom) {
  // A 768 KiB birth is 256 KiB short: dropping the 512 KiB parked extent makes room, and it goes fast.
  const nlohmann::json j = run_script("a0=3M a1=512K f1 a2=768K");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "extents_trimmed"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "parked_fast_trimmed_bytes"), 512 * kKiB) << j.dump(1);
  EXPECT_EQ(get(j, "forced_slow_allocations"), 0u) << j.dump(1);
  EXPECT_LE(get(j, "peak_fast_bytes"), 4 * kMiB);
}

TEST(ParkedRoom, ASmallerObjectInALargerParkedExtentKeepsItsPagesForTheLargerClass) {
  // A 1200 KiB object (a 1.25 MiB extent class) takes the parked 2 MiB extent (up to twice its class) with
  // all its pages, and may use them (malloc_usable_size says 2 MiB). Freed, the extent is parked whole, and
  // the next 2 MiB object faults nothing in: only object 0's pages were ever faulted in.
  std::string out;
  const nlohmann::json j = run_script("a0=2M f0 a1=1200K u1 f1 a2=2M", "4M", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "parked_fast_reuses"), 2u) << j.dump(1);
  EXPECT_EQ(get(j, "empty_birth_bytes_fast"), 2 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "forced_slow_allocations"), 0u) << j.dump(1);
  EXPECT_NE(out.find("usable 1 2097152"), std::string::npos) << out;
}

TEST(ParkedRoom, ASmallerObjectInALargerParkedExtentCountsTheWholeExtent) {
  // The price of keeping those pages: the 2 MiB the 1200 KiB object holds stay in the 4 MiB budget until it
  // is freed, so a 2.5 MiB object born beside it goes slow (with only its own 1.25 MiB counted it would fit).
  // The budget is never exceeded.
  const nlohmann::json j = run_script("a0=2M f0 a1=1200K a2=2560K", "4M");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "parked_fast_reuses"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "forced_slow_allocations"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "empty_birth_bytes_slow"), 2560 * kKiB) << j.dump(1);
  EXPECT_LE(get(j, "peak_fast_bytes"), 4 * kMiB);
}

TEST(ParkedRoom, APrefetchTakesTheRoomOfTheEvictionQueuedAheadOfIt) {
  // Budget 2 MiB: object 0 fast, object 1 fast then freed (parked), object 2 born slow (no room). Then
  // object 0 is evicted and object 2 prefetched right behind it, on the one channel: the prefetch fits
  // in the room the eviction gives back, the parked extent stays, and object 3 of its class reuses it.
  const nlohmann::json j = run_script("a0=1M a1=1M a2=1M f1 m0@2 m2@0 w a3=1M", "2M");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "migrations_done"), 2u) << j.dump(1);
  EXPECT_EQ(get(j, "migrations_refused_budget"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "extents_trimmed"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "parked_fast_reuses"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "empty_birth_bytes_fast"), 2 * kMiB) << j.dump(1);
  EXPECT_LE(get(j, "peak_fast_bytes"), 2 * kMiB);
}

TEST(ParkedRoom, APrefetchWithNoRoomWhenItStartsIsRefusedAndLeavesTheObjectWhereItWas) {
  // The same without the eviction and the free: two objects hold the budget, nothing is parked, so the
  // prefetch is refused when it starts; object 2 stays slow, and the books balance at exit.
  const nlohmann::json j = run_script("a0=1M a1=1M a2=1M m2@0 w", "2M");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "migrations_done"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "migrations_refused_budget"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "fast_live_bytes_at_exit"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "slow_live_bytes_at_exit"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "placer_release_errors"), 0u) << j.dump(1);
}

// Without a budget a birth whose class has no cached extent takes a resident one of a larger class, up to
// twice its own, before it carves (preload/runtime.cc, place_extent): a step whose objects change classes
// otherwise carves new extents while the old ones sit cached, and the heap's peak holds both.
TEST(CachedFit, WithoutABudgetASmallerObjectReusesALargerCachedExtentBeforeCarving) {
  std::string out;
  const nlohmann::json j = run_script("a0=2M f0 a1=1200K u1 f1 a2=2M", "", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "extents_carved"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "heap_peak_resident_bytes"), 2 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "placer_release_errors"), 0u) << j.dump(1);
  // The object may use its own class (1.25 MiB), not the whole extent; the tail's pages are kept, so the
  // 2 MiB object after it faults nothing in.
  EXPECT_NE(out.find("usable 1 1310720"), std::string::npos) << out;
  EXPECT_EQ(get(j, "empty_birth_bytes_fast"), 2 * kMiB) << j.dump(1);
}

TEST(CachedFit, AnExtentMoreThanTwiceTheClassIsNotTaken) {
  const nlohmann::json j = run_script("a0=2M f0 a1=512K", "");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "extents_carved"), 2u) << j.dump(1);
  EXPECT_EQ(get(j, "heap_peak_resident_bytes"), 2 * kMiB + 512 * kKiB) << j.dump(1);
}

TEST(CachedFit, UnderABudgetASlowBirthTakesALargerSlowExtentAndKeepsItsTail) {
  // Budget 1 MiB: every object is born slow. The second takes the first's 2 MiB slow extent; the pages past
  // its 1.25 MiB class stay (it may use its class only), so the third, of the 2 MiB class again, finds all
  // 512 pages resident (b: not written). Before, the tail was dropped and the third found 320.
  std::string out;
  const nlohmann::json j = run_script("a0=2M f0 a1=1200K u1 f1 b2=2M r2", "1M", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "forced_slow_allocations"), 3u) << j.dump(1);
  EXPECT_EQ(get(j, "extents_carved"), 1u) << j.dump(1);
  EXPECT_NE(out.find("usable 1 1310720"), std::string::npos) << out;
  EXPECT_NE(out.find("resident 2 512"), std::string::npos) << out;
  EXPECT_EQ(get(j, "slow_tails_kept_bytes"), 768 * kKiB) << j.dump(1);
  EXPECT_EQ(get(j, "slow_tails_dropped_bytes"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "empty_birth_bytes_slow"), 2 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "slow_live_bytes_at_exit"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "placer_release_errors"), 0u) << j.dump(1);
}

TEST(CachedFit, AMoveToFastDropsTheTailOfALargerSlowExtentFirst) {
  // Budget 2 MiB: objects 3 (256 KiB) and 2 (768 KiB) are fast; object 0 (2 MiB) goes slow and is freed;
  // object 1 (1.25 MiB class) is born slow in its extent and keeps the 768 KiB tail. Object 2's free parks
  // its extent, and the prefetch of object 1 to object 3's node drops the parked pages for room and the
  // tail, which the budget does not count, before it starts: the fast pool holds 1.5 MiB, not 2.25.
  std::string out;
  const nlohmann::json j = run_script("a3=256K a2=768K a0=2M f0 a1=1200K f2 m1@3 w u1 r1 f1", "2M", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "migrations_done"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "slow_tails_kept_bytes"), 768 * kKiB) << j.dump(1);
  EXPECT_EQ(get(j, "slow_tails_dropped_bytes"), 768 * kKiB) << j.dump(1);
  EXPECT_EQ(get(j, "migrations_refused_tail"), 0u) << j.dump(1);
  EXPECT_NE(out.find("usable 1 1310720"), std::string::npos) << out;
  EXPECT_NE(out.find("resident 1 300"), std::string::npos) << out;  // its own pages, intact
  EXPECT_LE(get(j, "peak_fast_bytes"), 2 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "fast_live_bytes_at_exit"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "slow_live_bytes_at_exit"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "placer_release_errors"), 0u) << j.dump(1);
}

}  // namespace

// A fast birth under a budget into an extent with no pages (fresh, or its pages dropped) has them faulted in
// with one call at its birth (runtime.cc, populate_birth): its own pages, not its extent's tail. A birth into
// a parked extent, whose pages are there, and a birth without a budget (its extent is carved once and kept)
// are not populated.
TEST(ParkedRoom, AFastBirthIntoAnEmptyExtentHasItsPagesFaultedInAtOnce) {
  std::string out;
  // 1000 KiB: 250 pages of a 256-page extent class (1 MiB).
  nlohmann::json j = run_script("b0=1000K r0 f0 b1=1000K r1", "4M", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_NE(out.find("resident 0 250"), std::string::npos) << out;
  EXPECT_NE(out.find("resident 1 250"), std::string::npos) << out;  // the parked pages, kept
  EXPECT_EQ(get(j, "parked_fast_reuses"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "fast_births_populated_bytes"), 1000 * kKiB) << j.dump(1);
  // Without a budget nothing is populated: the pages come when the program writes them.
  j = run_script("b0=1000K r0", "", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_NE(out.find("resident 0 0"), std::string::npos) << out;
  EXPECT_EQ(get(j, "fast_births_populated_bytes"), 0u) << j.dump(1);
}

// The time the program's threads spend turning fast pages over (dropping parked pages for room, faulting
// births in) is measured, and once 64 MiB were faulted in that way the stats say what a byte faulted in
// cost (preload/fault_cost.h, measured_turnover_cost): 8 MiB and 3 MiB objects in turn under an 8 MiB
// budget, each birth dropping the other's parked extent and faulting its own pages in.
TEST(ParkedRoom, TheTimeSpentTurningFastPagesOverPricesAByteFaultedIn) {
  std::string script;
  for (int i = 0; i < 7; ++i) script += "a0=8M f0 a1=3M f1 ";
  const nlohmann::json j = run_script(script, "8M");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "fast_births_populated_bytes"), 7 * 11 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "parked_fast_trimmed_bytes"), (7 * 8 + 6 * 3) * kMiB) << j.dump(1);  // all but the first birth trim
  const double ns = static_cast<double>(get(j, "fast_turnover_ns"));
  EXPECT_GT(ns, 0.0);
  EXPECT_DOUBLE_EQ(j.at("fault_ns_per_byte_paid").get<double>(), ns / static_cast<double>(7 * 11 * kMiB));
  // Fewer bytes than that say nothing yet.
  const nlohmann::json few = run_script("a0=8M f0 a1=3M", "8M");
  ASSERT_TRUE(few.is_object());
  EXPECT_GT(get(few, "fast_turnover_ns"), 0u);
  EXPECT_EQ(few.at("fault_ns_per_byte_paid").get<double>(), 0.0);
}

// A dry run returns parked pages for room in the books only (preload/runtime.cc, make_fast_room): the fast
// node's capacity is a book there, as the slow node is. Budget 4 MiB: objects 0 (3 MiB) and 1 (512 KiB) fast,
// 2 (1 MiB) slow; 2 and 1 freed (1 parked). Object 3 (1 MiB) needs room: 1's parked extent is returned in the
// books, and 3 takes 2's slow extent with its pages (kept: the pools share the real node; before, they were
// returned and populated). Object 0 freed, object 4 (512 KiB, not written) needs room again: 0's
// parked extent is returned in the books, and 4 takes 1's extent with every page still there, booked as
// faulted in (the library before returned them for real: object 4 read zeros, and was populated). Object 5
// (3 MiB, calloc) goes slow into 0's kept extent (kept across pools too) and reads as zeros.
TEST(ParkedRoom, ADryRunReturnsParkedPagesForRoomInTheBooksOnly) {
  std::string out;
  const nlohmann::json j = run_script("a0=3M a1=512K a2=1M f2 f1 a3=1M f0 b4=512K v4 c5=3M", "4M", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(get(j, "extents_trimmed"), 2u) << j.dump(1);
  EXPECT_EQ(get(j, "parked_fast_trimmed_bytes"), 3 * kMiB + 512 * kKiB) << j.dump(1);
  EXPECT_NE(out.find("value 4 2"), std::string::npos) << out;  // 1's pages and bytes (a1 wrote 2s), kept
  EXPECT_EQ(get(j, "kept_birth_bytes"), 512 * kKiB + 1 * kMiB + 3 * kMiB) << j.dump(1);  // objects 4, 3 and 5
  // Booked as a tiered machine takes them: the pages of objects 3 and 4 count as faulted in; only 0 and 1 were.
  EXPECT_EQ(get(j, "empty_birth_bytes_fast"), 5 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "fast_births_populated_bytes"), 3 * kMiB + 512 * kKiB) << j.dump(1);
  EXPECT_EQ(get(j, "empty_birth_bytes_slow"), 4 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "forced_slow_allocations"), 2u) << j.dump(1);
  // The kept pages never held the heap above its peak, and the books balance.
  EXPECT_EQ(get(j, "heap_peak_resident_bytes"), 4 * kMiB + 512 * kKiB) << j.dump(1);
  EXPECT_LE(get(j, "peak_fast_bytes"), 4 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "fast_live_bytes_at_exit"), 0u) << j.dump(1);
  EXPECT_EQ(get(j, "placer_release_errors"), 0u) << j.dump(1);
}

// And a fast birth whose class has no extent with pages takes a kept extent's of a larger class (up to twice
// its own) instead of faulting fresh ones in (core/object_heap.h, hand_over). Budget 8 MiB: objects 0 (1 MiB)
// and 1 (2 MiB) fast, 2 (6 MiB) slow; 2 and 1 freed. Object 3 (6 MiB) makes room by returning 1's parked
// extent in the books, and takes 2's with its pages (the pools share the real node: kept, booked as faulted
// in; the library before returned them and populated 6 MiB). Object 3 freed; object 4 (1.5 MiB, not written)
// makes room by returning 3's, and gets the first 1.5 MiB of 1's pages (a1 wrote 2s), faulting nothing in.
TEST(ParkedRoom, ADryRunHandsKeptPagesToABirthOfASmallerClass) {
  std::string out;
  const nlohmann::json j = run_script("a0=1M a1=2M a2=6M f2 f1 a3=6M f3 b4=1536K v4", "8M", &out);
  ASSERT_TRUE(j.is_object());
  EXPECT_NE(out.find("value 4 2"), std::string::npos) << out;
  EXPECT_GE(get(j, "kept_handed_over_bytes"), 1536 * kKiB) << j.dump(1);
  EXPECT_EQ(get(j, "kept_birth_bytes"), 6 * kMiB + get(j, "kept_handed_over_bytes")) << j.dump(1);
  EXPECT_EQ(get(j, "fast_births_populated_bytes"), 3 * kMiB) << j.dump(1);  // objects 0 and 1
  EXPECT_EQ(get(j, "forced_slow_allocations"), 1u) << j.dump(1);
  EXPECT_EQ(get(j, "heap_peak_resident_bytes"), 9 * kMiB) << j.dump(1);
  EXPECT_LE(get(j, "peak_fast_bytes"), 8 * kMiB) << j.dump(1);
  EXPECT_EQ(get(j, "placer_release_errors"), 0u) << j.dump(1);
}
