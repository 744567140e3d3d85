#include "sampler/software_sampler.h"

#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "sampler/segv_chain.h"

namespace sentinel {

// A window's `word` is (generation << 2) | state. The generation makes every transition unique, so a
// handler's compare-exchange cannot succeed on an entry that was recycled after it was read (ABA).
// start/end/slot/phase/pages are written by the owner only while the entry is free, before the
// release-store that arms it, and the handler reads them only after an acquire-load that saw it armed.
struct SoftwareSampler::Window {
  std::atomic<uint64_t> word{0};
  std::atomic<uintptr_t> start{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<uint32_t> slot{0};
  std::atomic<uint32_t> phase{0};
  std::atomic<uint32_t> pages{0};
};

struct SoftwareSampler::Counters {
  std::atomic<uint64_t> armed{0};
  std::atomic<uint64_t> touched{0};
  std::atomic<uint64_t> written{0};
  std::atomic<uint64_t> armed_pages{0};
};

struct SoftwareSampler::Stats {
  std::atomic<uint64_t> arms{0}, windows_armed{0}, armed_now{0}, skipped_small{0}, skipped_range{0},
      skipped_capacity{0}, mprotect_failures{0}, faults_claimed{0}, faults_retried{0}, faults_chained{0};
  std::atomic<uint32_t> high_water{0};  // entries [0, high_water) may be in use
  std::atomic<uint64_t> epoch{1};       // advances at every arm/disarm
};

namespace {

constexpr uint64_t kFree = 0, kArmed = 1, kRestoring = 2, kTouched = 3;
uint64_t state_of(uint64_t word) { return word & 3; }
uint64_t next_word(uint64_t word, uint64_t state) { return ((word >> 2) + 1) << 2 | state; }

std::atomic<SoftwareSampler*> g_active{nullptr};

// The last fault of this thread that the handler could not attribute; a repeat in the same epoch
// goes to the program. initial-exec: no lazy TLS allocation inside the signal handler.
__attribute__((tls_model("initial-exec"))) thread_local uintptr_t t_retry_addr = 0;
__attribute__((tls_model("initial-exec"))) thread_local uint64_t t_retry_epoch = 0;

bool fault_was_write(void* ucontext) {
#if defined(__x86_64__)
  // Bit 1 of the page-fault error code: the access was a write.
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  return uc != nullptr && (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
  (void)ucontext;
  return false;
#endif
}

}  // namespace

SoftwareSampler::SoftwareSampler() = default;
SoftwareSampler::~SoftwareSampler() { stop(); }

bool SoftwareSampler::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_;
}

bool SoftwareSampler::start(const SoftwareSamplerOptions& options, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fail = [&](const std::string& m) {
    if (error != nullptr) *error = "software sampler: " + m;
    return false;
  };
  if (started_) return fail("already started");
  if (options.max_slots == 0 || options.max_phases == 0 || options.max_windows == 0 ||
      options.window_pages == 0) {
    return fail("max_slots, max_phases, max_windows and window_pages must be positive");
  }
  const uint64_t cells = uint64_t{options.max_slots} * options.max_phases;
  if (cells > (uint64_t{1} << 28)) return fail("max_slots * max_phases is too large");
  SoftwareSampler* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this)) return fail("another sampler owns SIGSEGV");
  opt_ = options;
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  windows_.reset(new (std::nothrow) Window[options.max_windows]);
  counters_.reset(new (std::nothrow) Counters[cells]);
  stats_.reset(new (std::nothrow) Stats);
  if (windows_ == nullptr || counters_ == nullptr || stats_ == nullptr) {
    windows_.reset();
    counters_.reset();
    stats_.reset();
    g_active.store(nullptr);
    return fail("out of memory for the tables");
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = &SoftwareSampler::on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction previous;
  if (__sigaction(SIGSEGV, &sa, &previous) != 0) {
    const int e = errno;
    windows_.reset();
    counters_.reset();
    stats_.reset();
    g_active.store(nullptr);
    return fail(std::string("sigaction(SIGSEGV): ") + std::strerror(e));
  }
  SegvChain::init_from(previous);
  started_ = true;
  return true;
}

void SoftwareSampler::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) return;
  started_ = false;
  disarm_locked();
  struct sigaction program;
  SegvChain::get(&program);
  __sigaction(SIGSEGV, &program, nullptr);
  // Faults after this point reach the program's handler directly from the kernel. A handler that
  // loaded g_active just before may still be scanning the tables, so they are freed only with the
  // object (or replaced by a later start()), not here; counts stay readable.
  g_active.store(nullptr, std::memory_order_release);
}

void SoftwareSampler::set_program_handler(const struct sigaction& act, struct sigaction* old) {
  SegvChain::set(act, old);
}

void SoftwareSampler::get_program_handler(struct sigaction* out) { SegvChain::get(out); }

void SoftwareSampler::count_touch(const Window& w, bool write) {
  Counters& c = counters_[uint64_t{w.slot.load(std::memory_order_relaxed)} * opt_.max_phases +
                          w.phase.load(std::memory_order_relaxed)];
  c.touched.fetch_add(1, std::memory_order_relaxed);
  if (write) c.written.fetch_add(1, std::memory_order_relaxed);
}

void SoftwareSampler::on_signal(int sig, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  SoftwareSampler* self = g_active.load(std::memory_order_acquire);
  // Only a kernel-generated protection fault can be ours; everything else (unmapped address, a
  // SIGSEGV sent with kill/raise) goes straight to the program.
  if (self != nullptr && info != nullptr && info->si_code == SEGV_ACCERR &&
      self->claim(reinterpret_cast<uintptr_t>(info->si_addr), ucontext)) {
    errno = saved_errno;
    return;
  }
  if (self != nullptr) self->stats_->faults_chained.fetch_add(1, std::memory_order_relaxed);
  SegvChain::deliver(sig, info, ucontext);
  errno = saved_errno;
}

// Async-signal-safe. Returns true if the faulting access should simply be retried.
bool SoftwareSampler::claim(uintptr_t addr, void* ucontext) {
  Stats& st = *stats_;
  const uint64_t epoch = st.epoch.load(std::memory_order_acquire);
  const uint32_t n = st.high_water.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    Window& w = windows_[i];
    uint64_t word = w.word.load(std::memory_order_acquire);
    if (state_of(word) != kArmed && state_of(word) != kRestoring) continue;
    const uintptr_t start = w.start.load(std::memory_order_relaxed);
    if (addr < start || addr >= w.end.load(std::memory_order_relaxed)) continue;
    if (state_of(word) == kArmed &&
        w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
      const uintptr_t end = w.end.load(std::memory_order_relaxed);
      if (mprotect(reinterpret_cast<void*>(start), end - start, PROT_READ | PROT_WRITE) != 0) {
        // Cannot restore (should not happen: restoring never needs a new VMA). Retrying would
        // loop forever, so the fault goes to the program.
        w.word.store(next_word(next_word(word, kRestoring), kArmed), std::memory_order_release);
        return false;
      }
      count_touch(w, fault_was_write(ucontext));
      st.faults_claimed.fetch_add(1, std::memory_order_relaxed);
      st.armed_now.fetch_sub(1, std::memory_order_relaxed);
      w.word.store(next_word(next_word(word, kRestoring), kTouched), std::memory_order_release);
      return true;
    }
    // Another thread (or the owner) is restoring this window: wait until the pages are accessible.
    while (state_of(w.word.load(std::memory_order_acquire)) == kRestoring) sched_yield();
    return true;
  }
  // Not in an armed window. It may have been restored between the fault and this scan: retry once.
  if (t_retry_addr == addr && t_retry_epoch == epoch) {
    t_retry_addr = 0;
    return false;
  }
  t_retry_addr = addr;
  t_retry_epoch = epoch;
  st.faults_retried.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void SoftwareSampler::restore_locked(Window& w, bool count_as_touch) {
  uint64_t word = w.word.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t s = state_of(word);
    if (s == kFree) return;
    if (s == kRestoring) {  // a handler is restoring it; wait for it to finish
      sched_yield();
      word = w.word.load(std::memory_order_acquire);
      continue;
    }
    if (s == kTouched) break;
    if (w.word.compare_exchange_weak(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
      word = next_word(word, kRestoring);
      const uintptr_t start = w.start.load(std::memory_order_relaxed);
      mprotect(reinterpret_cast<void*>(start), w.end.load(std::memory_order_relaxed) - start,
               PROT_READ | PROT_WRITE);
      if (count_as_touch) count_touch(w, true);
      stats_->armed_now.fetch_sub(1, std::memory_order_relaxed);
      break;
    }
  }
  w.word.store(next_word(word, kFree), std::memory_order_release);
}

void SoftwareSampler::disarm_locked() {
  Stats& st = *stats_;
  const uint32_t n = st.high_water.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) restore_locked(windows_[i], false);
  st.high_water.store(0, std::memory_order_release);
  st.epoch.fetch_add(1, std::memory_order_release);
}

void SoftwareSampler::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) disarm_locked();
}

size_t SoftwareSampler::arm(const std::vector<SampleRegion>& regions, uint32_t phase) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) return 0;
  disarm_locked();
  Stats& st = *stats_;
  st.arms.fetch_add(1, std::memory_order_relaxed);
  const uint64_t rotation = rotation_++;
  uint32_t used = 0;
  for (const SampleRegion& r : regions) {
    if (r.slot >= opt_.max_slots || phase >= opt_.max_phases) {
      st.skipped_range.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    // Only whole pages inside the region: a window must never cover another object's bytes.
    const uintptr_t first = (r.addr + page_ - 1) / page_ * page_;
    const uintptr_t last = r.len > SIZE_MAX - r.addr ? 0 : (r.addr + r.len) / page_ * page_;
    if (first < r.addr || last <= first) {
      st.skipped_small.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (used == opt_.max_windows) {
      st.skipped_capacity.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const uint64_t pages = (last - first) / page_;
    const uint64_t wp = pages < opt_.window_pages ? pages : opt_.window_pages;
    // Rotate: consecutive arms of one object sample consecutive windows; objects start spread out.
    const uint64_t k = (rotation + uint64_t{r.slot} * 2654435761u) % (pages / wp);
    const uintptr_t start = first + k * wp * page_;
    Window& w = windows_[used];
    const uint64_t word = w.word.load(std::memory_order_relaxed);  // free: disarm_locked freed all
    w.start.store(start, std::memory_order_relaxed);
    w.end.store(start + wp * page_, std::memory_order_relaxed);
    w.slot.store(r.slot, std::memory_order_relaxed);
    w.phase.store(phase, std::memory_order_relaxed);
    w.pages.store(static_cast<uint32_t>(wp), std::memory_order_relaxed);
    w.word.store(next_word(word, kArmed), std::memory_order_release);
    st.high_water.store(used + 1, std::memory_order_release);
    // Published before protecting: any fault in the window finds it armed.
    st.armed_now.fetch_add(1, std::memory_order_relaxed);
    if (mprotect(reinterpret_cast<void*>(start), wp * page_, PROT_NONE) != 0) {
      st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
      restore_locked(w, false);  // nothing was protected; frees the entry
      continue;  // the entry is reused (high_water may shrink back below only at disarm)
    }
    Counters& c = counters_[uint64_t{r.slot} * opt_.max_phases + phase];
    c.armed.fetch_add(1, std::memory_order_relaxed);
    c.armed_pages.fetch_add(wp, std::memory_order_relaxed);
    st.windows_armed.fetch_add(1, std::memory_order_relaxed);
    ++used;
  }
  return used;
}

void SoftwareSampler::release(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) return;
  const uint32_t n = stats_->high_water.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    Window& w = windows_[i];
    if (state_of(w.word.load(std::memory_order_acquire)) != kFree &&
        w.slot.load(std::memory_order_relaxed) == slot) {
      restore_locked(w, false);
    }
  }
}

void SoftwareSampler::unprotect(uintptr_t addr, size_t len, bool count_as_touch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || len == 0) return;
  const uintptr_t end = len > SIZE_MAX - addr ? SIZE_MAX : addr + len;
  const uint32_t n = stats_->high_water.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    Window& w = windows_[i];
    if (state_of(w.word.load(std::memory_order_acquire)) == kFree) continue;
    if (w.start.load(std::memory_order_relaxed) < end && addr < w.end.load(std::memory_order_relaxed)) {
      restore_locked(w, count_as_touch);
    }
  }
}

WindowCounts SoftwareSampler::counts(uint32_t slot, uint32_t phase) const {
  std::lock_guard<std::mutex> lock(mu_);
  WindowCounts out;
  if (counters_ == nullptr || slot >= opt_.max_slots || phase >= opt_.max_phases) return out;
  const Counters& c = counters_[uint64_t{slot} * opt_.max_phases + phase];
  out.armed = c.armed.load(std::memory_order_relaxed);
  out.touched = c.touched.load(std::memory_order_relaxed);
  out.written = c.written.load(std::memory_order_relaxed);
  out.armed_pages = c.armed_pages.load(std::memory_order_relaxed);
  return out;
}

void SoftwareSampler::reset_counts() {
  std::lock_guard<std::mutex> lock(mu_);
  if (counters_ == nullptr) return;
  const uint64_t cells = uint64_t{opt_.max_slots} * opt_.max_phases;
  for (uint64_t i = 0; i < cells; ++i) {
    counters_[i].armed.store(0, std::memory_order_relaxed);
    counters_[i].touched.store(0, std::memory_order_relaxed);
    counters_[i].written.store(0, std::memory_order_relaxed);
    counters_[i].armed_pages.store(0, std::memory_order_relaxed);
  }
}

SoftwareSamplerStats SoftwareSampler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SoftwareSamplerStats out;
  if (stats_ == nullptr) return out;
  const Stats& s = *stats_;
  out.arms = s.arms.load();
  out.windows_armed = s.windows_armed.load();
  out.armed_now = s.armed_now.load();
  out.skipped_small = s.skipped_small.load();
  out.skipped_range = s.skipped_range.load();
  out.skipped_capacity = s.skipped_capacity.load();
  out.mprotect_failures = s.mprotect_failures.load();
  out.faults_claimed = s.faults_claimed.load();
  out.faults_retried = s.faults_retried.load();
  out.faults_chained = s.faults_chained.load();
  return out;
}

}  // namespace sentinel
