// Queue semantics of the migration engine: priorities, full queue, cancel, tickets, teardown.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <random>
#include <thread>

#include "migrate/engine.h"
#include "test_util.h"

namespace sentinel::migrate {
namespace {

using namespace std::chrono_literals;
using testing::Mapping;
using testing::RecordingOwner;

constexpr auto kForever = std::chrono::hours(1);

TEST(EngineQueue, PrefetchRunsBeforeEvictAndFifoWithinPriority) {
  Mapping m(64 << 10);
  ASSERT_TRUE(m.ok());
  RecordingOwner owner;
  EngineConfig cfg;
  cfg.owner = &owner;
  cfg.chunk_pages = 16;  // the gate move below then takes thousands of syscalls
  Engine e(cfg);
  // Not started yet: everything waits in the queue, so the order is decided by priority alone.
  std::vector<std::pair<uint64_t, Priority>> plan = {
      {1, Priority::kBackground}, {2, Priority::kNormal},    {3, Priority::kHigh}, {4, Priority::kNormal},
      {5, Priority::kHigh},   {6, Priority::kBackground}, {7, Priority::kNormal}};
  std::string err;
  // Before start() the engine refuses work.
  EXPECT_FALSE(e.enqueue(1, 1, m.addr, m.len, 0, Priority::kNormal).valid());
  ASSERT_TRUE(e.start(&err)) << err;
  // Hold the engine thread in a long move so the rest queue up behind it.
  Mapping big(256 << 20);  // untouched: every page is absent, each chunk is one syscall
  Ticket gate = e.enqueue(100, 1, big.addr, big.len, 0, Priority::kHigh);
  ASSERT_TRUE(gate.valid());
  while (e.query(gate) == State::kQueued) std::this_thread::yield();
  std::vector<Ticket> tickets;
  for (auto& [id, prio] : plan) tickets.push_back(e.enqueue(id, 1, m.addr, m.len, 0, prio));
  for (auto t : tickets) ASSERT_TRUE(t.valid());
  for (auto t : tickets) EXPECT_EQ(e.wait(t, kForever), State::kDone);
  e.stop();  // the owner callback runs after wait() sees the result; stop() joins the thread
  auto calls = owner.snapshot();
  ASSERT_EQ(calls.size(), plan.size() + 1);
  std::vector<uint64_t> order;
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].object_id != 100) order.push_back(calls[i].object_id);
  // If the gate move finished before all were queued, the first few may have run in arrival order;
  // a 256 MiB absent range takes 64 chunks of move_pages, far longer than 7 enqueues, so expect:
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 5, 2, 4, 7, 1, 6}));
}

TEST(EngineQueue, FullQueueRefusesAndCounts) {
  Mapping m(4096);
  EngineConfig cfg;
  cfg.queue_capacity = 4;
  cfg.chunk_pages = 16;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err)) << err;
  Mapping big(256 << 20);
  Ticket gate = e.enqueue(100, 1, big.addr, big.len, 0, Priority::kNormal);
  while (e.query(gate) == State::kQueued) std::this_thread::yield();
  // One slot is running the gate move: three more fit, the fourth is refused.
  int accepted = 0, refused = 0;
  for (int i = 0; i < 5; ++i) (e.enqueue(i, 1, m.addr, m.len, 0, Priority::kNormal).valid() ? accepted : refused)++;
  if (e.query(gate) == State::kRunning) {
    EXPECT_EQ(accepted, 3);
    EXPECT_EQ(refused, 2);
    EXPECT_EQ(e.snapshot().queue_full, 2u);
  }
  EXPECT_EQ(e.wait(gate, kForever), State::kDone);
  e.stop();
  EXPECT_FALSE(e.enqueue(9, 1, m.addr, m.len, 0, Priority::kNormal).valid());  // stopped: refused
}

TEST(EngineQueue, BadArgumentsGiveNoTicket) {
  Engine e(EngineConfig{});
  std::string err;
  ASSERT_TRUE(e.start(&err));
  char c;
  EXPECT_FALSE(e.enqueue(1, 1, nullptr, 4096, 0, Priority::kNormal).valid());
  EXPECT_FALSE(e.enqueue(1, 1, &c, 0, 0, Priority::kNormal).valid());
  EXPECT_FALSE(e.enqueue(1, 1, &c, 1, 0, static_cast<Priority>(7)).valid());
  EXPECT_EQ(e.query(Ticket{}), State::kUnknown);
  EXPECT_EQ(e.query(Ticket{0xffffffffull}), State::kUnknown);
}

TEST(EngineQueue, CancelQueuedDropsItWithoutCallback) {
  Mapping m(64 << 10);
  RecordingOwner owner;
  EngineConfig cfg;
  cfg.owner = &owner;
  cfg.chunk_pages = 16;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err));
  Mapping big(256 << 20);
  Ticket gate = e.enqueue(100, 1, big.addr, big.len, 0, Priority::kHigh);
  while (e.query(gate) == State::kQueued) std::this_thread::yield();
  Ticket a = e.enqueue(1, 7, m.addr, m.len, 0, Priority::kNormal);
  Ticket b = e.enqueue(2, 7, m.addr, m.len, 0, Priority::kNormal);
  ASSERT_EQ(e.query(a), State::kQueued) << "gate move ended too early";
  EXPECT_EQ(e.cancel(1, 6), CancelResult::kNotFound);  // wrong generation
  EXPECT_EQ(e.cancel(1, 7), CancelResult::kCancelled);
  EXPECT_EQ(e.query(a), State::kCancelled);
  EXPECT_EQ(e.wait(a, kForever), State::kCancelled);
  EXPECT_EQ(e.cancel(1, 7), CancelResult::kNotFound);
  EXPECT_EQ(e.wait(b, kForever), State::kDone);
  e.stop();
  for (auto& c : owner.snapshot()) EXPECT_NE(c.object_id, 1u);
  EXPECT_EQ(owner.count.load(), 2u);  // gate and b
  EXPECT_EQ(e.snapshot().cancelled_queued, 1u);
}

TEST(EngineQueue, CancelRunningStopsEarlyAndCallsOwnerBack) {
  RecordingOwner owner;
  EngineConfig cfg;
  cfg.owner = &owner;
  cfg.chunk_pages = 1;  // one syscall per page: the move runs long enough to be caught running
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err));
  Mapping big(256 << 20);
  Ticket t = e.enqueue(42, 3, big.addr, big.len, 0, Priority::kNormal);
  State s;
  while ((s = e.query(t)) == State::kQueued) std::this_thread::yield();
  ASSERT_EQ(s, State::kRunning);
  EXPECT_EQ(e.cancel(42, 3), CancelResult::kRunning);
  MoveResult r;
  EXPECT_EQ(e.wait(t, kForever, &r), State::kCancelled);
  EXPECT_TRUE(r.cancel_requested);
  EXPECT_LT(r.pages_moved + r.pages_absent, r.pages);
  e.stop();
  auto calls = owner.snapshot();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].object_id, 42u);
  EXPECT_EQ(calls[0].generation, 3u);
  EXPECT_EQ(calls[0].result.state, State::kCancelled);
}

// Every accepted move ends exactly once: either cancel() dropped it (kCancelled) or the owner is
// called. Many threads enqueue and cancel at once.
TEST(EngineQueue, CancelRaceAccountsEveryMoveExactlyOnce) {
  constexpr int kThreads = 4, kOps = 3000;
  Mapping m(16 << 10);
  m.fill(1);
  RecordingOwner owner;
  EngineConfig cfg;
  cfg.owner = &owner;
  cfg.queue_capacity = 64;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err));
  std::atomic<uint64_t> accepted{0}, dropped{0}, running_cancels{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kOps; ++i) {
        uint64_t obj = t * 1000 + rng() % 8;
        if (rng() % 3 == 0) {
          CancelResult c = e.cancel(obj, 1);
          if (c == CancelResult::kRunning) running_cancels++;
        } else if (e.enqueue(obj, 1, m.addr, m.len, 0, static_cast<Priority>(rng() % 3)).valid()) {
          accepted++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  e.stop();
  auto s = e.snapshot();
  dropped = s.cancelled_queued;
  EXPECT_EQ(accepted.load(), s.enqueued);
  EXPECT_EQ(owner.count.load() + dropped.load(), accepted.load());
  EXPECT_EQ(s.cancelled_running, running_cancels.load());
  EXPECT_TRUE(m.check(1));
  EXPECT_EQ(e.queued(), 0u);
}

TEST(EngineQueue, StaleTicketBecomesUnknownAfterSlotReuse) {
  Mapping m(4096);
  EngineConfig cfg;
  cfg.queue_capacity = 2;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err));
  Ticket first = e.enqueue(1, 1, m.addr, m.len, 0, Priority::kNormal);
  ASSERT_EQ(e.wait(first, kForever), State::kDone);
  for (int i = 0; i < 4; ++i) {
    Ticket t = e.enqueue(2 + i, 1, m.addr, m.len, 0, Priority::kNormal);
    ASSERT_EQ(e.wait(t, kForever), State::kDone);
  }
  EXPECT_EQ(e.query(first), State::kUnknown);
}

TEST(EngineQueue, WaitTimesOutOnAQueuedMove) {
  Mapping m(4096);
  EngineConfig cfg;
  cfg.chunk_pages = 16;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err));
  Mapping big(256 << 20);
  Ticket gate = e.enqueue(100, 1, big.addr, big.len, 0, Priority::kHigh);
  Ticket t = e.enqueue(1, 1, m.addr, m.len, 0, Priority::kBackground);
  State s = e.wait(t, 1ms);
  EXPECT_TRUE(s == State::kQueued || s == State::kRunning || s == State::kDone) << to_string(s);
  EXPECT_EQ(e.wait(t, kForever), State::kDone);
  EXPECT_EQ(e.wait(gate, kForever), State::kDone);
}

TEST(EngineQueue, TeardownWithQueuedWorkEndsEveryMove) {
  for (int round = 0; round < 20; ++round) {
    Mapping m(4096);
    RecordingOwner owner;
    EngineConfig cfg;
    cfg.owner = &owner;
    auto e = std::make_unique<Engine>(cfg);
    std::string err;
    ASSERT_TRUE(e->start(&err));
    EXPECT_FALSE(e->start(&err));  // twice: refused
    int accepted = 0;
    for (int i = 0; i < 50; ++i) accepted += e->enqueue(i, 1, m.addr, m.len, 0, Priority::kNormal).valid();
    e.reset();  // destructor stops: queued moves end as cancelled(stopped) and the owner hears of them
    EXPECT_EQ(owner.count.load(), static_cast<uint64_t>(accepted));
    for (auto& c : owner.snapshot()) {
      EXPECT_TRUE(c.result.state == State::kDone ||
                  (c.result.state == State::kCancelled && c.result.reason == FailReason::kStopped));
    }
  }
  Engine never_started(EngineConfig{});  // destroying an engine that never ran is fine
}

// The owner is asked when a move is to start, after the moves queued ahead of it ended (the runtime takes
// a prefetch's fast memory then: preload/migration.cc). A refused move touches no page and ends as
// failed, reason kRefused; the others run in queue order.
class GateOwner : public RecordingOwner {
 public:
  bool on_move_starting(uint64_t object_id, uint64_t, int target_node) override {
    std::lock_guard<std::mutex> g(mu);
    asked.push_back(object_id);
    // What ended before this one started: the queue is one channel, first in, first out.
    ended_before.push_back(calls.size());
    target = target_node;
    return object_id != refuse;
  }
  uint64_t refuse = 0;
  int target = -1;
  std::vector<uint64_t> asked;
  std::vector<size_t> ended_before;
};

TEST(EngineQueue, TheOwnerIsAskedWhenAMoveStartsAndMayRefuseIt) {
  Mapping m(64 << 10);
  ASSERT_TRUE(m.ok());
  GateOwner owner;
  owner.refuse = 2;
  EngineConfig cfg;
  cfg.owner = &owner;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err)) << err;
  std::vector<Ticket> t;
  for (uint64_t id : {1, 2, 3}) t.push_back(e.enqueue(id, 1, m.addr, m.len, 0, Priority::kNormal));
  MoveResult refused;
  EXPECT_EQ(e.wait(t[0], kForever), State::kDone);
  EXPECT_EQ(e.wait(t[1], kForever, &refused), State::kFailed);
  EXPECT_EQ(refused.reason, FailReason::kRefused);
  EXPECT_EQ(refused.pages_moved, 0u);
  EXPECT_EQ(e.wait(t[2], kForever), State::kDone);
  e.stop();
  EXPECT_EQ(owner.asked, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(owner.ended_before, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(owner.target, 0);
  const auto calls = owner.snapshot();
  ASSERT_EQ(calls.size(), 3u);  // the refused move is reported finished too
  EXPECT_EQ(calls[1].object_id, 2u);
  EXPECT_EQ(calls[1].result.reason, FailReason::kRefused);
  const StatsSnapshot s = e.snapshot();
  EXPECT_EQ(s.refused_at_start, 1u);
  EXPECT_EQ(s.moves_done, 2u);
  EXPECT_EQ(s.moves_failed, 0u);  // a refusal is not a failed move
}

class MaskOwner : public Owner {
 public:
  void on_move_finished(uint64_t, uint64_t, const MoveResult&) override {
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, nullptr, &cur);
    blocked = sigismember(&cur, SIGINT) && sigismember(&cur, SIGPROF) && sigismember(&cur, SIGSEGV);
    on_other_thread = std::this_thread::get_id() != main;
  }
  std::thread::id main = std::this_thread::get_id();
  std::atomic<bool> blocked{false}, on_other_thread{false};
};

TEST(EngineQueue, EngineThreadBlocksAllSignals) {
  Mapping m(4096);
  MaskOwner owner;
  EngineConfig cfg;
  cfg.owner = &owner;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err));
  ASSERT_EQ(e.wait(e.enqueue(1, 1, m.addr, m.len, 0, Priority::kNormal), kForever), State::kDone);
  e.stop();
  EXPECT_TRUE(owner.blocked.load());
  EXPECT_TRUE(owner.on_other_thread.load());
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, nullptr, &cur);
  EXPECT_FALSE(sigismember(&cur, SIGINT));  // the caller's mask is restored
}

// A move's end is published only after the owner's books: while on_move_finished runs, the move reads
// running, and a waiter woken by anything else (here: a queued move cancelled, which wakes all waiters)
// keeps waiting. Before, the state was set first, and sentinel_wait_move could return while the runtime
// still held the move's claim.
class SlowBooksOwner : public Owner {
 public:
  void on_move_finished(uint64_t object_id, uint64_t, const MoveResult&) override {
    if (object_id != 1) return;
    in_books.store(true);
    while (!release.load()) std::this_thread::yield();
    books_done.store(true);
  }
  std::atomic<bool> in_books{false}, release{false}, books_done{false};
};

TEST(EngineQueue, AMoveReadsRunningUntilTheOwnersBooksAreDone) {
  Mapping a(64 << 10), b(64 << 10);
  ASSERT_TRUE(a.ok() && b.ok());
  SlowBooksOwner owner;
  EngineConfig cfg;
  cfg.owner = &owner;
  Engine e(cfg);
  std::string err;
  ASSERT_TRUE(e.start(&err)) << err;
  const Ticket first = e.enqueue(1, 1, a.addr, a.len, 0, Priority::kNormal);
  while (!owner.in_books.load()) std::this_thread::yield();
  const Ticket second = e.enqueue(2, 1, b.addr, b.len, 0, Priority::kNormal);  // queued behind the books
  std::atomic<bool> waiter_saw_end_before_books{false};
  std::thread waiter([&] {
    const State st = e.wait(first, kForever);
    if (st == State::kDone && !owner.books_done.load()) waiter_saw_end_before_books.store(true);
  });
  EXPECT_EQ(e.query(first), State::kRunning);
  EXPECT_EQ(e.wait(first, std::chrono::milliseconds(20)), State::kRunning);
  EXPECT_EQ(e.cancel(2, 1), CancelResult::kCancelled);  // wakes every waiter
  EXPECT_EQ(e.query(first), State::kRunning);
  owner.release.store(true);
  EXPECT_EQ(e.wait(first, kForever), State::kDone);
  waiter.join();
  EXPECT_FALSE(waiter_saw_end_before_books.load());
  EXPECT_EQ(e.query(second), State::kCancelled);
}

}  // namespace
}  // namespace sentinel::migrate
