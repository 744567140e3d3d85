// Long randomized runs with the kernel failing at random (os/fault_injector.h): the object heap, budget
// placement and binding, the migration engine and topology detection must keep every byte of the
// program's data, keep the budget, count the failures, and neither crash nor hang.
#include <sys/mman.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/object_heap.h"
#include "migrate/engine.h"
#include "migrate/test_util.h"
#include "os/fault_injector.h"
#include "place/budget_placer.h"
#include "topo/fake_sysfs.h"
#include "topo/topology.h"

namespace sentinel {
namespace {

using os::FaultConfig;
using os::Op;
using os::op_bit;
using os::ScopedFaultInjection;

uint64_t word_for(uint64_t seed, uint64_t i) { return seed * 0x9e3779b97f4a7c15ull + i; }

void fill(void* p, uint64_t bytes, uint64_t seed) {
  auto* w = static_cast<uint64_t*>(p);
  for (uint64_t i = 0; i < bytes / 8; ++i) w[i] = word_for(seed, i);
}
bool intact(const void* p, uint64_t bytes, uint64_t seed) {
  const auto* w = static_cast<const uint64_t*>(p);
  for (uint64_t i = 0; i < bytes / 8; ++i)
    if (w[i] != word_for(seed, i)) return false;
  return true;
}
bool all_zero(const void* p, uint64_t bytes) {
  const auto* w = static_cast<const uint64_t*>(p);
  for (uint64_t i = 0; i < bytes / 8; ++i)
    if (w[i] != 0) return false;
  return true;
}

TEST(FaultSoak, HeapInitFailsCleanlyWhenMmapFails) {
  const FaultConfig c{.seed = 11, .rate = 0.5, .ops = op_bit(Op::kMmap) | op_bit(Op::kMadvise)};
  ScopedFaultInjection inject(c);
  int ok = 0, refused = 0;
  for (int round = 0; round < 40; ++round) {
    ObjectHeap heap;
    if (!heap.init(4ull << 30, 1u << 14)) {
      ++refused;  // the runtime then runs as pass-through: every allocation goes to the system allocator
      continue;
    }
    ++ok;
    bool zeroed = false;
    const uint32_t slot = heap.allocate(1 << 20, 4096, 0, &zeroed);
    ASSERT_NE(slot, kNoSlot);
    fill(reinterpret_cast<void*>(heap.record(slot).start), 1 << 20, round);
    EXPECT_TRUE(intact(reinterpret_cast<void*>(heap.record(slot).start), 1 << 20, round));
    heap.destroy();
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(refused, 0);
  EXPECT_GT(os::fault_counts().failed[static_cast<int>(Op::kMmap)], 0u);
}

// Every free trims (cache limit 0) while MADV_DONTNEED fails at random: an extent is reported zeroed
// only if it really reads as zeros, and no live object ever changes.
TEST(FaultSoak, HeapKeepsDataAndTheZeroedPromiseWhenMadviseFails) {
  ObjectHeap heap;
  ASSERT_TRUE(heap.init(4ull << 30, 1u << 16));
  heap.set_resident_limit(0);
  const FaultConfig c{.seed = 12, .rate = 0.3, .ops = op_bit(Op::kMadvise)};
  std::mt19937_64 rng(12);
  struct Live {
    uint32_t slot;
    uint64_t size, seed;
  };
  std::vector<Live> live;
  uint64_t releases = 0;
  {
    ScopedFaultInjection inject(c);
    for (int i = 0; i < 6000; ++i) {
      if (live.size() < 64 && (live.empty() || rng() % 2 == 0)) {
        const uint64_t size = (64ull << 10) << (rng() % 6);  // 64 KiB .. 2 MiB
        bool zeroed = false;
        const uint32_t slot = heap.allocate(size, 4096, static_cast<uint8_t>(rng() % 2), &zeroed);
        ASSERT_NE(slot, kNoSlot);
        void* p = reinterpret_cast<void*>(heap.record(slot).start);
        if (zeroed) {
          ASSERT_TRUE(all_zero(p, size)) << "extent claimed zeroed holds old data (i=" << i << ")";
        }
        const uint64_t seed = rng();
        fill(p, size, seed);
        live.push_back({slot, size, seed});
      } else {
        const size_t k = rng() % live.size();
        const Live l = live[k];
        ASSERT_TRUE(intact(reinterpret_cast<void*>(heap.record(l.slot).start), l.size, l.seed));
        heap.release(l.slot, rng() % 4 == 0);
        ++releases;
        live[k] = live.back();
        live.pop_back();
      }
    }
    for (const Live& l : live) EXPECT_TRUE(intact(reinterpret_cast<void*>(heap.record(l.slot).start), l.size, l.seed));
    EXPECT_GT(os::fault_counts().failed[static_cast<int>(Op::kMadvise)], 0u);
  }
  const HeapStats st = heap.stats();
  EXPECT_LT(st.extents_trimmed, releases);  // failed trims are not counted as trims
  EXPECT_GT(st.extents_trimmed, releases / 2);
  heap.destroy();
}

// Random choose/bind/move/free with mbind and madvise failing: the fast bytes never exceed the budget,
// every refused bind is counted, and the books balance at the end.
TEST(FaultSoak, BudgetHoldsAndBindFailuresAreCountedWhenMbindFails) {
  place::BudgetPlacer placer;
  place::PlacerConfig pc;
  pc.fast_node = 0;
  pc.slow_node = 1;
  pc.budget.kind = BudgetKind::kBytes;
  pc.budget.bytes = 8ull << 20;
  std::string_view why;
  const Status configured = placer.configure(pc);
  ASSERT_TRUE(configured.is_ok()) << configured.message();
  constexpr size_t kArena = 64ull << 20;
  char* arena = static_cast<char*>(::mmap(nullptr, kArena, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  ASSERT_NE(arena, MAP_FAILED);
  const FaultConfig c{.seed = 13, .rate = 0.25, .ops = op_bit(Op::kMbind) | op_bit(Op::kMadvise)};
  std::mt19937_64 rng(13);
  struct Obj {
    size_t off;
    uint64_t bytes;
    uint8_t pool;
  };
  std::vector<Obj> objs;
  size_t next_off = 0;
  uint64_t bind_calls = 0, bind_refusals = 0;
  {
    ScopedFaultInjection inject(c);
    for (int i = 0; i < 20000; ++i) {
      const int what = static_cast<int>(rng() % 3);
      if (what == 0 || objs.empty()) {
        const uint64_t bytes = place::extent_bytes_for((64ull << 10) << (rng() % 5));
        if (next_off + bytes > kArena) next_off = 0;
        const place::Want want = static_cast<place::Want>(rng() % 3);
        const place::Decision d = placer.choose(bytes, want);
        ++bind_calls;
        const bool bound = (rng() % 2 == 0) ? placer.bind(arena + next_off, bytes, d, &why)
                                            : placer.rebind(arena + next_off, bytes, d, &why);
        bind_refusals += !bound;
        objs.push_back({next_off, bytes, d.pool});
        next_off += bytes;
      } else if (what == 1) {
        Obj& o = objs[rng() % objs.size()];
        const uint8_t to = o.pool == place::kFastPool ? place::kSlowPool : place::kFastPool;
        if (placer.begin_move(to, o.bytes)) {
          const bool moved = rng() % 2 == 0;  // the engine may fail a move for any reason
          placer.end_move(o.pool, to, o.bytes, moved);
          if (moved) o.pool = to;
        }
      } else {
        const size_t k = rng() % objs.size();
        placer.release(objs[k].pool, objs[k].bytes);
        objs[k] = objs.back();
        objs.pop_back();
      }
      const place::PlacerStats st = placer.stats();
      ASSERT_LE(st.fast_live_bytes, st.budget_bytes) << "at step " << i;
    }
    EXPECT_GT(os::fault_counts().failed[static_cast<int>(Op::kMbind)], 0u);
  }
  for (const Obj& o : objs) placer.release(o.pool, o.bytes);
  const place::PlacerStats st = placer.stats();
  EXPECT_EQ(st.fast_live_bytes, 0u);
  EXPECT_EQ(st.slow_live_bytes, 0u);
  EXPECT_EQ(st.release_errors, 0u);
  EXPECT_EQ(st.binds + st.rebinds, bind_calls);
  EXPECT_EQ(st.bind_failures, bind_refusals);
  EXPECT_GT(st.bind_failures, 0u);
  ::munmap(arena, kArena);
}

// A recycled extent whose old pages the kernel will not drop (madvise refused every time): rebind moves
// the pages instead, keeps the contents, and says they were not dropped (calloc must clear them). On two
// nodes the pages start on the slow node and end on the fast one. With mbind refused too, it fails and
// counts the failure.
TEST(FaultSoak, BudgetRebindMovesThePagesWhenTheDropIsRefused) {
  const bool two_nodes = migrate::testing::have_two_nodes();
  place::BudgetPlacer placer;
  place::PlacerConfig pc;
  pc.fast_node = 0;
  pc.slow_node = 1;
  ASSERT_TRUE(placer.configure(pc).is_ok());
  constexpr size_t kLen = 64 * 4096;
  void* p = ::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::string_view why;
  if (two_nodes) {
    ASSERT_TRUE(place::bind_range(p, kLen, 1, place::BindMode::kPreferred, false, &why, nullptr)) << why;
  }
  fill(p, kLen, 5);
  place::Decision fast;
  fast.pool = place::kFastPool;
  fast.node = 0;
  {
    ScopedFaultInjection inject(FaultConfig{.seed = 3, .rate = 1.0, .ops = op_bit(Op::kMadvise)});
    bool dropped = true;
    ASSERT_TRUE(placer.rebind(p, kLen, fast, &why, &dropped)) << why;
    EXPECT_FALSE(dropped);
    EXPECT_GT(os::fault_counts().failed[static_cast<int>(Op::kMadvise)], 0u);
  }
  EXPECT_TRUE(intact(p, kLen, 5));
  uint64_t counts[2] = {};
  uint64_t absent = 0;
  ASSERT_TRUE(place::count_pages(p, kLen, counts, 1, &absent));
  EXPECT_EQ(counts[0], kLen / 4096);
  EXPECT_EQ(placer.stats().rebinds_moving, 1u);
  EXPECT_EQ(placer.stats().bind_failures, 0u);
  {
    ScopedFaultInjection inject(FaultConfig{.seed = 3, .rate = 1.0, .ops = op_bit(Op::kMadvise) | op_bit(Op::kMbind)});
    EXPECT_FALSE(placer.rebind(p, kLen, fast, &why));
  }
  EXPECT_TRUE(intact(p, kLen, 5));
  EXPECT_EQ(placer.stats().bind_failures, 1u);
  EXPECT_EQ(placer.stats().rebinds_moving, 1u);
  ::munmap(p, kLen);
}

// Moves of checksummed objects while move_pages, mbind, madvise and mincore fail at random (whole calls
// and single pages): every move ends, a move reported done has no failed page, failures are counted,
// and no byte of any object changes. On a two-node machine the moves alternate between the nodes and a
// move reported done has all present pages on its target.
TEST(FaultSoak, MigrationEngineKeepsDataAndCountsFailuresWhenMovePagesFails) {
  using migrate::testing::Mapping;
  const bool two_nodes = migrate::testing::have_two_nodes();
  migrate::EngineConfig ec;
  ec.fast_node = 0;
  ec.slow_node = two_nodes ? 1 : -1;
  ec.chunk_pages = 64;
  migrate::Engine engine(ec);
  std::string err;
  ASSERT_TRUE(engine.start(&err)) << err;
  constexpr int kObjects = 12;
  std::vector<std::unique_ptr<Mapping>> objs;
  std::mt19937_64 rng(14);
  for (int i = 0; i < kObjects; ++i) {
    objs.push_back(std::make_unique<Mapping>((16 + rng() % 240) * 4096));
    ASSERT_TRUE(objs.back()->ok());
    objs.back()->fill(i);
  }
  const uint32_t ops = op_bit(Op::kMovePages) | op_bit(Op::kMbind) | op_bit(Op::kMadvise) | op_bit(Op::kMincore);
  const FaultConfig c{.seed = 14, .rate = 0.2, .ops = ops};
  uint64_t done = 0, failed = 0;
  {
    ScopedFaultInjection inject(c);
    for (int round = 0; round < 300; ++round) {
      const int i = static_cast<int>(rng() % kObjects);
      Mapping& m = *objs[i];
      const int target = two_nodes ? static_cast<int>(round % 2) : 0;
      migrate::MoveResult r;
      const migrate::Ticket t = engine.enqueue(i, round, m.addr, m.len, target, migrate::Priority::kNormal);
      ASSERT_TRUE(t.valid());
      const migrate::State s = engine.wait(t, std::chrono::hours(1), &r);
      ASSERT_TRUE(s == migrate::State::kDone || s == migrate::State::kFailed) << migrate::to_string(s);
      if (s == migrate::State::kDone) {
        ++done;
        EXPECT_EQ(r.reason, migrate::FailReason::kNone);
        EXPECT_EQ(r.pages_failed, 0u);
      } else {
        ++failed;
        EXPECT_NE(r.reason, migrate::FailReason::kNone);
      }
      ASSERT_TRUE(m.check(i)) << "object " << i << " changed after move " << round;
      if (two_nodes && s == migrate::State::kDone) {
        // Placement is checked with faults off (the query itself goes through the injector).
        os::stop_fault_injection();
        size_t present = 0;
        for (int st : migrate::testing::page_nodes(m.addr, m.len)) present += st >= 0;
        const size_t on_target = migrate::testing::pages_on(m.addr, m.len, target);
        EXPECT_EQ(on_target, present) << "object " << i << " round " << round << " target " << target << ": pages "
                                      << r.pages << " moved " << r.pages_moved << " absent " << r.pages_absent;
        ASSERT_TRUE(os::start_fault_injection(c));
      }
    }
  }
  const migrate::StatsSnapshot st = engine.snapshot();
  EXPECT_GT(done, 0u);
  EXPECT_GT(failed, 0u);
  EXPECT_EQ(st.moves_done, done);
  EXPECT_EQ(st.moves_failed, failed);
  EXPECT_GT(st.pages_busy + st.pages_nomem + st.pages_other_error, 0u);
  engine.stop();
  for (int i = 0; i < kObjects; ++i) EXPECT_TRUE(objs[i]->check(i));
}

// Topology reads (sysfs open/read) failing at random: detection either succeeds with a sound answer or
// fails with a message (the runtime then runs as pass-through); it never crashes.
TEST(FaultSoak, TopologyDetectionFailsCleanlyWhenSysfsReadsFail) {
  topo::testing::FakeSysfs sys;
  sys.set_online("0-1");
  sys.add_node(0, 4096, 2048, "0-1", {10, 30});
  sys.add_node(1, 8192, 8000, "", {30, 10});
  const FaultConfig c{.seed = 15, .rate = 0.1, .ops = op_bit(Op::kOpenRead) | op_bit(Op::kRead)};
  ScopedFaultInjection inject(c);
  int ok = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    topo::TopologyOptions opt;
    opt.sysfs_root = sys.root();
    topo::Topology t;
    std::string error;
    if (topo::detect_topology(opt, &t, &error)) {
      ++ok;
      EXPECT_EQ(t.fast_node, 0);
      if (t.tiered()) {
        EXPECT_EQ(t.slow_node, 1);
      }
    } else {
      ++refused;
      EXPECT_FALSE(error.empty());
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(refused, 0);
  EXPECT_GT(os::fault_counts().failed[static_cast<int>(Op::kOpenRead)], 0u);
}

}  // namespace
}  // namespace sentinel
