#include "service.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "logging.h"
#include "manager.h"
#include "os/futex.h"
#include "profiler.h"
#include "runtime.h"
#include "runtime_state.h"
#include "status_file.h"

namespace sentinel::rt {
namespace {

std::atomic<bool> g_running{false};
std::atomic<bool> g_started{false};  // service_start_once() has run (or must never run: a forked child)

using PthreadCreate = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
// The next pthread_create (libc's), resolved on first use; dlsym may allocate (system allocator: this
// thread is not in an allocation path here).
PthreadCreate real_pthread_create() noexcept {
  static std::atomic<PthreadCreate> resolved{nullptr};
  PthreadCreate f = resolved.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = reinterpret_cast<PthreadCreate>(::dlsym(RTLD_NEXT, "pthread_create"));
    resolved.store(f, std::memory_order_release);
  }
  return f;
}
// The dispatcher's lock: the service thread's pass against the exit handler's. Never taken on a program
// thread's allocation path.
std::mutex g_dispatch;
LiveObjects* g_live = nullptr;  // created by the first pass, never destroyed (exit-time frees)
// The dispatcher's (its lock); created at the first rename, never destroyed (the exit handler's last pass).
std::vector<manage::TwinRename>* g_twin_renames = nullptr;

}  // namespace

void name_persistent_twins(LiveObjects& live, uint64_t born_now) {
  std::vector<std::pair<uint64_t, uint64_t>> objects;
  objects.reserve(live.size());
  for (const auto& [key, o] : live) {
    if (key != born_now) objects.emplace_back(key, o.tag);
  }
  for (const manage::TwinRename& r : manage::twin_renames(std::move(objects))) {
    live[r.key].tag = r.tag;
    if (g_twin_renames == nullptr) g_twin_renames = new std::vector<manage::TwinRename>();
    g_twin_renames->push_back(r);
  }
}

std::vector<manage::TwinRename> take_twin_renames() {
  if (g_twin_renames == nullptr || g_twin_renames->empty()) return {};
  return std::exchange(*g_twin_renames, {});
}

namespace {

void dispatch_pass() {
  std::lock_guard<std::mutex> lock(g_dispatch);
  try {
    if (g_live == nullptr) g_live = new LiveObjects();
    LiveObjects& live = *g_live;
    ObjectEvent e;
    while (g_state.events.pop(&e)) {
      if (e.kind == ObjectEventKind::kAborted) continue;
      const uint64_t key = instance_key(e.slot, e.generation);
      if (e.kind == ObjectEventKind::kResize) {  // the mirror's size; consumers place objects by their births
        if (auto it = live.find(key); it != live.end()) it->second.size = e.size;
        continue;
      }
      if (e.kind == ObjectEventKind::kAlloc) live[key] = LiveObject{e.tag, e.site, e.occurrence, e.size, e.extent_bytes};
      profiler_on_event(e, live);
      manager_on_event(e, live);
      if (e.kind == ObjectEventKind::kFree) live.erase(key);
    }
    manager_tick(live);
  } catch (...) {
    // Out of memory on the service thread: a consumer loses events (it notices: the step structure or its
    // mirror no longer matches); the program does not.
  }
}

// Gives the host budget of ranks that died (kill -9) back to the living, about once a second.
void recover_dead_ranks() {
  static uint64_t last_ns = 0;
  if (!g_state.ledger.joined()) return;
  const uint64_t now = now_ns();
  if (now - last_ns < 1000000000ull) return;
  last_ns = now;
  if (g_state.ledger.recover_dead() != 0) log_write(LogLevel::kWarn, "host ledger: recovered the share of a rank that died");
}

void* service_main(void*) {
  mark_thread_internal();
  while (g_running.load(std::memory_order_relaxed)) {
    const uint32_t seen = g_state.service_wake.load(std::memory_order_acquire);
    // The step search, off the allocation path (core/step_tracker.h): first, so that a structure it finds
    // is in force for the events dispatched next.
    g_state.steps.search(g_state.clock_lock);
    dispatch_pass();
    // Quiet allocation events may wait for a later wake-up only while the manager has nothing to do at
    // them (runtime.cc). When that ends, an event filled while the flag still said so may not have woken
    // this thread: one more pass after the fence takes it (see quiet_events_may_wait).
    const bool may_wait = manager_lets_quiet_events_wait();
    if (g_state.quiet_events_wait.exchange(may_wait, std::memory_order_seq_cst) && !may_wait) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      dispatch_pass();
    }
    status_publish(false);
    flush_deferred();
    recover_dead_ranks();
    const uint64_t tick_ns = profiler_tick();
    os::futex_wait(&g_state.service_wake, seen,
                        tick_ns != 0 ? std::chrono::nanoseconds(tick_ns) : std::chrono::nanoseconds(100'000'000));
  }
  return nullptr;
}

}  // namespace

void service_start_once() noexcept {
  if (g_started.exchange(true, std::memory_order_acq_rel)) return;
  // Signals stay with the program's threads: the service thread blocks all of them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  g_running.store(true, std::memory_order_release);
  // Through the process's pthread_create, not libc's directly: a sanitizer's interceptor ahead of
  // Sentinel must see the thread (Sentinel's own export finds the service started and passes it on).
  if (::pthread_create(&thread, nullptr, service_main, nullptr) == 0) {
    pthread_detach(thread);
  } else {
    g_running.store(false, std::memory_order_release);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

bool service_running() noexcept { return g_running.load(std::memory_order_acquire); }

int program_thread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) noexcept {
  // The program becomes multi-threaded: Sentinel's own thread no longer costs it glibc's single-threaded
  // mode. (Sentinel's own threads come here too: the engine's, started at initialisation with the service.)
  if (g_state.phase.load(std::memory_order_acquire) == Phase::kActive) service_start_once();
  PthreadCreate create = real_pthread_create();
  return create != nullptr ? create(thread, attr, start, arg) : EAGAIN;
}

void service_drain() noexcept { dispatch_pass(); }

void service_fork_child() noexcept {
  g_running.store(false, std::memory_order_relaxed);
  g_started.store(true, std::memory_order_relaxed);  // a child that does not exec runs as pass-through
  // The parent's service thread may have held the lock at fork: the child has no such thread.
  new (&g_dispatch) std::mutex();
}

}  // namespace sentinel::rt
