// Queue, tickets, thread lifecycle and statistics of the migration engine. The page moving itself
// is in engine_move.cc.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "migrate/engine.h"
#include "migrate/engine_internal.h"
#include "os/futex.h"

namespace sentinel::migrate {

const char* to_string(State s) {
  switch (s) {
    case State::kUnknown: return "unknown";
    case State::kQueued: return "queued";
    case State::kRunning: return "running";
    case State::kDone: return "done";
    case State::kFailed: return "failed";
    case State::kCancelled: return "cancelled";
  }
  return "?";
}

const char* to_string(FailReason r) {
  switch (r) {
    case FailReason::kNone: return "none";
    case FailReason::kNoMemory: return "target node full (ENOMEM)";
    case FailReason::kBusy: return "pages busy (EBUSY) after retries";
    case FailReason::kFault: return "pages not mapped or other page error";
    case FailReason::kInvalidNode: return "invalid target node";
    case FailReason::kSyscall: return "move_pages failed";
    case FailReason::kStopped: return "engine stopped";
    case FailReason::kRefused: return "refused by the owner at start";
  }
  return "?";
}

static bool terminal(State s) { return s == State::kDone || s == State::kFailed || s == State::kCancelled; }

Engine::Engine(const EngineConfig& config) : config_(config) {
  if (config_.queue_capacity == 0) config_.queue_capacity = 1;
  if (config_.queue_capacity > (size_t{1} << 20)) config_.queue_capacity = size_t{1} << 20;
  if (config_.chunk_pages == 0) config_.chunk_pages = 1;
  if (config_.busy_retries < 0) config_.busy_retries = 0;
  slots_.reset(new Slot[config_.queue_capacity]);
  for (int p = 0; p < kNumPriorities; ++p) head_[p] = tail_[p] = kNil;
  free_head_ = free_tail_ = kNil;
  uint32_t nb = 1;
  while (nb < 2 * config_.queue_capacity) nb <<= 1;
  buckets_.reset(new uint32_t[nb]);
  for (uint32_t b = 0; b < nb; ++b) buckets_[b] = kNil;
  bucket_mask_ = nb - 1;
  for (uint32_t i = 0; i < config_.queue_capacity; ++i) push_free(i);
  pages_.reset(new void*[config_.chunk_pages]);
  nodes_.reset(new int[config_.chunk_pages]);
  status_.reset(new int[config_.chunk_pages]);
  origin_.reset(new int[config_.chunk_pages]);
  incore_.reset(new unsigned char[config_.chunk_pages]);
  huge_ = pmd_huge_size();
  const size_t fringe_max = 2 * (huge_ / static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  fringe_pages_.reset(new void*[fringe_max]);
  fringe_before_.reset(new int[fringe_max]);
  fringe_after_.reset(new int[fringe_max]);
}

Engine::~Engine() { stop(); }

void Engine::push_free(uint32_t i) {
  slots_[i].next = kNil;
  if (free_tail_ == kNil) free_head_ = i; else slots_[free_tail_].next = i;
  free_tail_ = i;
}

uint32_t Engine::bucket_of(uint64_t object_id) const {
  uint64_t h = object_id * 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(h >> 32) & bucket_mask_;
}

void Engine::push_queue(uint32_t i) {
  Slot& s = slots_[i];
  int p = static_cast<int>(s.priority);
  s.next = kNil;
  s.prev = tail_[p];
  if (tail_[p] == kNil) head_[p] = i; else slots_[tail_[p]].next = i;
  tail_[p] = i;
  uint32_t b = bucket_of(s.object_id);
  s.hnext = buckets_[b];
  buckets_[b] = i;
  ++queued_;
}

void Engine::unlink_queue(uint32_t i) {
  Slot& s = slots_[i];
  int p = static_cast<int>(s.priority);
  if (s.prev == kNil) head_[p] = s.next; else slots_[s.prev].next = s.next;
  if (s.next == kNil) tail_[p] = s.prev; else slots_[s.next].prev = s.prev;
  s.next = s.prev = kNil;
  uint32_t* link = &buckets_[bucket_of(s.object_id)];
  while (*link != kNil && *link != i) link = &slots_[*link].hnext;
  if (*link == i) *link = s.hnext;
  s.hnext = kNil;
  --queued_;
}

bool Engine::start(std::string* error) {
  if (thread_started_.load()) {
    *error = "migration engine already started";
    return false;
  }
  stop_.store(false);
  {
    std::lock_guard<os::SpinLock> g(lock_);
    accepting_ = true;
  }
  // The engine thread must never run a signal handler of the program (it may hold no locks the
  // handler expects, and profilers' SIGPROF/SIGSEGV tricks are not meant for it).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  int rc = pthread_create(&t, nullptr, &Engine::thread_entry, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    std::lock_guard<os::SpinLock> g(lock_);
    accepting_ = false;
    *error = std::string("pthread_create: ") + std::strerror(rc);
    return false;
  }
  thread_ = t;
  thread_started_.store(true, std::memory_order_release);
  return true;
}

void* Engine::thread_entry(void* self) {
  pthread_setname_np(pthread_self(), "sentinel-migr");
  static_cast<Engine*>(self)->run();
  return nullptr;
}

void Engine::stop() {
  {
    std::lock_guard<os::SpinLock> g(lock_);
    accepting_ = false;
  }
  if (thread_started_.load()) {
    stop_.store(true);
    doorbell_.fetch_add(1);
    os::futex_wake(&doorbell_, 1);
    pthread_join(static_cast<pthread_t>(thread_), nullptr);
    thread_started_.store(false);
  }
  // Whatever is still queued never runs: it ends as cancelled (reason kStopped), and the owner hears
  // about it, since it did not cancel these itself.
  for (;;) {
    uint32_t i = kNil;
    {
      std::lock_guard<os::SpinLock> g(lock_);
      for (int p = 0; p < kNumPriorities && i == kNil; ++p) i = head_[p];
      if (i == kNil) break;
      unlink_queue(i);
      running_ = i;
    }
    MoveResult r;
    r.state = State::kCancelled;
    r.reason = FailReason::kStopped;
    r.target_node = slots_[i].target;
    finish(i, r);
  }
}

Ticket Engine::enqueue(uint64_t object_id, uint64_t generation, void* addr, size_t len, int target_node,
                       Priority priority, Neighbours neighbours) {
  if (addr == nullptr || len == 0 || static_cast<int>(priority) >= kNumPriorities) return Ticket{};
  uint64_t value;
  {
    std::lock_guard<os::SpinLock> g(lock_);
    if (!accepting_ || free_head_ == kNil) {
      stats_.queue_full.fetch_add(1, std::memory_order_relaxed);
      return Ticket{};
    }
    uint32_t i = free_head_;
    free_head_ = slots_[i].next;
    if (free_head_ == kNil) free_tail_ = kNil;
    Slot& s = slots_[i];
    s.object_id = object_id;
    s.generation = generation;
    s.addr = reinterpret_cast<uintptr_t>(addr);
    s.len = len;
    s.target = target_node;
    s.priority = priority;
    s.neighbours = neighbours;
    if (++s.seq == 0) s.seq = 1;
    s.state = State::kQueued;
    s.result = MoveResult{};
    s.result.state = State::kQueued;
    s.result.target_node = target_node;
    s.cancel_requested.store(false, std::memory_order_relaxed);
    push_queue(i);
    value = (static_cast<uint64_t>(s.seq) << 32) | i;
  }
  stats_.enqueued.fetch_add(1, std::memory_order_relaxed);
  doorbell_.fetch_add(1);
  if (worker_sleeping_.load()) os::futex_wake(&doorbell_, 1);
  return Ticket{value};
}

Engine::Slot* Engine::slot_for(Ticket t) const {
  uint32_t i = static_cast<uint32_t>(t.value & 0xffffffffu);
  if (!t.valid() || i >= config_.queue_capacity) return nullptr;
  return &slots_[i];
}

State Engine::query(Ticket t, MoveResult* result) const {
  Slot* s = slot_for(t);
  if (s == nullptr) return State::kUnknown;
  std::lock_guard<os::SpinLock> g(lock_);
  if (s->seq != static_cast<uint32_t>(t.value >> 32)) return State::kUnknown;  // slot reused since
  if (result != nullptr) *result = s->result;
  return s->state;
}

State Engine::wait(Ticket t, std::chrono::nanoseconds timeout, MoveResult* result) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  waiters_.fetch_add(1);
  State st;
  for (;;) {
    uint32_t seen = completions_.load();
    st = query(t, result);
    if (st == State::kUnknown || terminal(st)) break;
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) break;
    os::futex_wait(&completions_, seen, std::chrono::duration_cast<std::chrono::nanoseconds>(left));
  }
  waiters_.fetch_sub(1);
  return st;
}

void Engine::wake_waiters() {
  completions_.fetch_add(1);
  if (waiters_.load() > 0) os::futex_wake(&completions_, INT32_MAX);
}

CancelResult Engine::cancel(uint64_t object_id, uint64_t generation) {
  bool dropped = false, running = false;
  {
    std::lock_guard<os::SpinLock> g(lock_);
    for (uint32_t c = buckets_[bucket_of(object_id)]; c != kNil;) {
      uint32_t next = slots_[c].hnext;
      Slot& s = slots_[c];
      if (s.object_id == object_id && s.generation == generation) {
        unlink_queue(c);
        s.state = State::kCancelled;
        s.result.state = State::kCancelled;
        push_free(c);
        dropped = true;
        stats_.cancelled_queued.fetch_add(1, std::memory_order_relaxed);
      }
      c = next;
    }
    if (running_ != kNil && slots_[running_].object_id == object_id &&
        slots_[running_].generation == generation) {
      slots_[running_].cancel_requested.store(true, std::memory_order_relaxed);
      running = true;
      stats_.cancelled_running.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (dropped) wake_waiters();
  if (running) return CancelResult::kRunning;
  return dropped ? CancelResult::kCancelled : CancelResult::kNotFound;
}

void Engine::run() {
  for (;;) {
    if (stop_.load()) return;
    uint32_t i = kNil;
    {
      std::lock_guard<os::SpinLock> g(lock_);
      for (int p = 0; p < kNumPriorities && i == kNil; ++p) i = head_[p];
      if (i != kNil) {
        unlink_queue(i);
        slots_[i].state = State::kRunning;
        slots_[i].result.state = State::kRunning;
        running_ = i;
      }
    }
    if (i != kNil) {
      const Slot& s = slots_[i];
      if (config_.owner != nullptr && !config_.owner->on_move_starting(s.object_id, s.generation, s.target)) {
        stats_.refused_at_start.fetch_add(1, std::memory_order_relaxed);
        MoveResult r;
        r.state = State::kFailed;
        r.reason = FailReason::kRefused;
        r.target_node = s.target;
        finish(i, r);
        continue;
      }
      execute(i);
      continue;
    }
    // Sleep protocol: announce sleeping, then re-check the queue; enqueue bumps the doorbell before
    // it reads worker_sleeping_, so either we see its item or it sees us asleep and wakes us.
    uint32_t bell = doorbell_.load();
    worker_sleeping_.store(true);
    bool empty;
    {
      std::lock_guard<os::SpinLock> g(lock_);
      empty = queued_ == 0;
    }
    if (empty && !stop_.load()) os::futex_wait(&doorbell_, bell, std::chrono::nanoseconds(-1));
    worker_sleeping_.store(false);
  }
}

void Engine::finish(uint32_t i, const MoveResult& r) {
  Slot& s = slots_[i];
  uint64_t object_id, generation;
  {
    std::lock_guard<os::SpinLock> g(lock_);
    object_id = s.object_id;
    generation = s.generation;
    running_ = kNil;
  }
  // Outside the lock: the owner may re-enter enqueue/cancel (a cancel finds nothing: the move is neither
  // queued nor running now). The slot still reads kRunning and is not free, so nothing reuses it here.
  if (config_.owner != nullptr) config_.owner->on_move_finished(object_id, generation, r);
  // The move's end is published only after the owner has done its books: published before, a waiter
  // (sentinel_wait_move) could return while the runtime still held the move's claim, and a free right after
  // it left the extent to the claim (a clean-clone CI saw 1 MiB still counted slow at exit in
  // ParkedRoom.APrefetchWithNoRoomWhenItStarts..., 1 run of 6).
  {
    std::lock_guard<os::SpinLock> g(lock_);
    s.result = r;
    s.state = r.state;
    push_free(i);
  }
  wake_waiters();
}

size_t Engine::queued() const {
  std::lock_guard<os::SpinLock> g(lock_);
  return queued_;
}

StatsSnapshot Engine::snapshot() const {
  auto l = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  StatsSnapshot s;
  s.enqueued = l(stats_.enqueued);
  s.queue_full = l(stats_.queue_full);
  s.cancelled_queued = l(stats_.cancelled_queued);
  s.cancelled_running = l(stats_.cancelled_running);
  s.moves_done = l(stats_.moves_done);
  s.moves_failed = l(stats_.moves_failed);
  s.refused_at_start = l(stats_.refused_at_start);
  s.objects_to_slow = l(stats_.objects_to_slow);
  s.bytes_to_slow = l(stats_.bytes_to_slow);
  s.objects_to_fast = l(stats_.objects_to_fast);
  s.bytes_to_fast = l(stats_.bytes_to_fast);
  s.objects_other = l(stats_.objects_other);
  s.bytes_other = l(stats_.bytes_other);
  s.pages_busy = l(stats_.pages_busy);
  s.pages_nomem = l(stats_.pages_nomem);
  s.pages_other_error = l(stats_.pages_other_error);
  s.pages_absent = l(stats_.pages_absent);
  s.rollbacks = l(stats_.rollbacks);
  s.pages_restored = l(stats_.pages_restored);
  s.move_ns = l(stats_.move_ns);
  s.late = l(stats_.late);
  s.channel = stats_.channel.totals();
  return s;
}

}  // namespace sentinel::migrate
