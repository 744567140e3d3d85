#include "sampler/software_sampler.h"

#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "os/os.h"
#include "sampler/segv_chain.h"

namespace sentinel {

// A window's `word` is (generation << 3) | state. The generation makes every transition unique, so a
// compare-exchange cannot succeed on an entry that was recycled after it was read (ABA), and a reader
// that sees the same word before and after reading the fields knows they belong together.
// start/end/slot/phase/pages/ticket are written by the owner only while the entry is free, before
// the store that publishes it as arming.
struct SoftwareSampler::Window {
  std::atomic<uint64_t> word{0};
  std::atomic<uintptr_t> start{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<uint32_t> slot{0};
  std::atomic<uint32_t> phase{0};
  std::atomic<uint32_t> pages{0};
  std::atomic<uint64_t> ticket{kNoReleaseTicket};  // the region's release ticket (rearm() checks it)
};

namespace {

struct Counters {
  std::atomic<uint64_t> armed{0};
  std::atomic<uint64_t> touched{0};
  std::atomic<uint64_t> written{0};
  std::atomic<uint64_t> dirtied{0};
  std::atomic<uint64_t> armed_pages{0};
  std::atomic<uint64_t> rearmed{0};
};

// Per object id: the window armed for it in the current arm (index + 1, 0 = none) and how many
// times it was released (the release ticket).
struct SlotState {
  std::atomic<uint32_t> window{0};
  std::atomic<uint64_t> releases{0};
};

struct Stats {
  std::atomic<uint64_t> arms{0}, windows_armed{0}, armed_now{0}, skipped_small{0}, skipped_range{0},
      skipped_capacity{0}, mprotect_failures{0}, faults_claimed{0}, faults_retried{0}, faults_chained{0},
      skipped_released{0}, skipped_duplicate{0}, releases_restored{0}, rearms{0}, windows_rearmed{0};
  std::atomic<uint32_t> high_water{0};  // entries [0, high_water) may be in use
  std::atomic<uint64_t> epoch{1};       // advances at every arm/disarm
};

}  // namespace

struct SoftwareSampler::Tables {
  SoftwareSamplerOptions opt;
  std::unique_ptr<Window[]> windows;     // max_windows
  std::unique_ptr<SlotState[]> slots;    // max_slots
  std::unique_ptr<Counters[]> counters;  // max_slots * max_phases
  Stats stats;

  Counters& counter(uint32_t slot, uint32_t phase) { return counters[uint64_t{slot} * opt.max_phases + phase]; }
};

namespace {

// kReadOnly: a read touched the armed window, which stays protected against writes (PROT_READ) so that
// a write later in the same cycle is seen too; it counts as armed (armed_now) until restored.
constexpr uint64_t kFree = 0, kArming = 1, kArmed = 2, kRestoring = 3, kRestored = 4, kReadOnly = 5;
uint64_t state_of(uint64_t word) { return word & 7; }
uint64_t next_word(uint64_t word, uint64_t state) { return ((word >> 3) + 1) << 3 | state; }

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

int make_accessible(uintptr_t start, uintptr_t end) {
  return os::mprotect(reinterpret_cast<void*>(start), end - start, PROT_READ | PROT_WRITE);
}

int make_read_only(uintptr_t start, uintptr_t end) {
  return os::mprotect(reinterpret_cast<void*>(start), end - start, PROT_READ);
}

Counters& counters_of(SoftwareSampler::Tables& t, const SoftwareSampler::Window& w) {
  return t.counter(w.slot.load(std::memory_order_relaxed), w.phase.load(std::memory_order_relaxed));
}

// The first access of a cycle (an arm or a rearm) to an armed window.
void count_touch(SoftwareSampler::Tables& t, const SoftwareSampler::Window& w, bool write) {
  Counters& c = counters_of(t, w);
  c.touched.fetch_add(1, std::memory_order_relaxed);
  if (write) {
    c.written.fetch_add(1, std::memory_order_relaxed);
    c.dirtied.fetch_add(1, std::memory_order_relaxed);
  }
}

// A write to a window a read had already touched in this cycle.
void count_dirtied(SoftwareSampler::Tables& t, const SoftwareSampler::Window& w) {
  counters_of(t, w).dirtied.fetch_add(1, std::memory_order_relaxed);
}

// Makes an owner-held entry (restored or free) free and forgets it in its slot's index.
void free_entry(SoftwareSampler::Tables& t, SoftwareSampler::Window& w, uint32_t index) {
  const uint64_t word = w.word.load(std::memory_order_relaxed);
  if (state_of(word) != kFree) {
    uint32_t expected = index + 1;
    t.slots[w.slot.load(std::memory_order_relaxed)].window.compare_exchange_strong(expected, 0);
    w.word.store(next_word(word, kFree), std::memory_order_release);
  }
}

void zero_counters(SoftwareSampler::Tables& t) {
  const uint64_t cells = uint64_t{t.opt.max_slots} * t.opt.max_phases;
  for (uint64_t i = 0; i < cells; ++i) {
    t.counters[i].armed.store(0, std::memory_order_relaxed);
    t.counters[i].touched.store(0, std::memory_order_relaxed);
    t.counters[i].written.store(0, std::memory_order_relaxed);
    t.counters[i].dirtied.store(0, std::memory_order_relaxed);
    t.counters[i].armed_pages.store(0, std::memory_order_relaxed);
    t.counters[i].rearmed.store(0, std::memory_order_relaxed);
  }
}

}  // namespace

SoftwareSampler::SoftwareSampler() = default;
SoftwareSampler::~SoftwareSampler() { stop(); }

bool SoftwareSampler::started() const { return started_.load(std::memory_order_acquire); }

bool SoftwareSampler::start(const SoftwareSamplerOptions& options, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fail = [&](const std::string& m) {
    if (error != nullptr) *error = "software sampler: " + m;
    return false;
  };
  if (started_.load(std::memory_order_relaxed)) return fail("already started");
  if (options.max_slots == 0 || options.max_phases == 0 || options.max_windows == 0 ||
      options.window_pages == 0) {
    return fail("max_slots, max_phases, max_windows and window_pages must be positive");
  }
  const uint64_t cells = uint64_t{options.max_slots} * options.max_phases;
  if (cells > (uint64_t{1} << 28)) return fail("max_slots * max_phases is too large");
  if (options.max_windows >= (uint32_t{1} << 31)) return fail("max_windows is too large");
  SoftwareSampler* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this)) return fail("another sampler owns SIGSEGV");
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  Tables* t = tables_.load(std::memory_order_relaxed);
  if (t != nullptr && t->opt.max_slots == options.max_slots && t->opt.max_phases == options.max_phases &&
      t->opt.max_windows == options.max_windows) {
    // Reuse: stop() left every entry free and no window protected. A release() from before the
    // restart may still be reading these tables; it finds nothing to restore.
    t->opt.window_pages = options.window_pages;
    zero_counters(*t);
    Stats& st = t->stats;
    for (auto* c : {&st.arms, &st.windows_armed, &st.skipped_small, &st.skipped_range, &st.skipped_capacity,
                    &st.mprotect_failures, &st.faults_claimed, &st.faults_retried, &st.faults_chained,
                    &st.skipped_released, &st.skipped_duplicate, &st.releases_restored, &st.rearms,
                    &st.windows_rearmed}) {
      c->store(0, std::memory_order_relaxed);
    }
  } else {
    // New sizes (or the first start): new tables. Old ones stay allocated until destruction, since a
    // late release() may still hold a pointer to them.
    std::unique_ptr<Tables> fresh(new (std::nothrow) Tables);
    if (fresh != nullptr) {
      fresh->opt = options;
      fresh->windows.reset(new (std::nothrow) Window[options.max_windows]);
      fresh->slots.reset(new (std::nothrow) SlotState[options.max_slots]);
      fresh->counters.reset(new (std::nothrow) Counters[cells]);
    }
    bool kept = false;
    if (fresh != nullptr && fresh->windows != nullptr && fresh->slots != nullptr && fresh->counters != nullptr) {
      try {
        owned_.push_back(std::move(fresh));
        kept = true;
      } catch (const std::bad_alloc&) {
      }
    }
    if (!kept) {
      g_active.store(nullptr);
      return fail("out of memory for the tables");
    }
    t = owned_.back().get();
    tables_.store(t, std::memory_order_release);
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = &SoftwareSampler::on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (!SegvChain::take_over(sa)) {
    const int e = errno;
    g_active.store(nullptr);
    return fail(std::string("sigaction(SIGSEGV): ") + std::strerror(e));
  }
  started_.store(true, std::memory_order_release);
  return true;
}

void SoftwareSampler::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_.load(std::memory_order_relaxed)) return;
  started_.store(false, std::memory_order_release);
  disarm_locked(*tables_.load(std::memory_order_relaxed));
  SegvChain::hand_back();
  // Faults after this point reach the program's handler directly from the kernel. A handler that
  // loaded g_active just before may still be scanning the tables, so they are freed only with the
  // object; counts stay readable.
  g_active.store(nullptr, std::memory_order_release);
}

void SoftwareSampler::set_program_handler(const struct sigaction& act, struct sigaction* old) {
  SegvChain::set(act, old);
}

int SoftwareSampler::program_sigaction(const struct sigaction* act, struct sigaction* old,
                                       int (*kernel)(int, const struct sigaction*, struct sigaction*)) {
  return SegvChain::program_sigaction(act, old, kernel);
}

void SoftwareSampler::on_signal(int sig, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  SoftwareSampler* self = g_active.load(std::memory_order_acquire);
  Tables* t = self == nullptr ? nullptr : self->tables_.load(std::memory_order_acquire);
  // Only a kernel-generated protection fault can be ours; everything else (unmapped address, a
  // SIGSEGV sent with kill/raise) goes straight to the program.
  if (t != nullptr && info != nullptr && info->si_code == SEGV_ACCERR &&
      self->claim(*t, reinterpret_cast<uintptr_t>(info->si_addr), ucontext)) {
    errno = saved_errno;
    return;
  }
  if (t != nullptr) t->stats.faults_chained.fetch_add(1, std::memory_order_relaxed);
  SegvChain::deliver(sig, info, ucontext);
  errno = saved_errno;
}

// Async-signal-safe. Returns true if the faulting access should simply be retried.
bool SoftwareSampler::claim(Tables& t, uintptr_t addr, void* ucontext) {
  Stats& st = t.stats;
  const uint64_t epoch = st.epoch.load(std::memory_order_acquire);
  const uint32_t n = st.high_water.load(std::memory_order_acquire);
  const bool write = fault_was_write(ucontext);
  for (uint32_t i = 0; i < n; ++i) {
    Window& w = t.windows[i];
    uint64_t word = w.word.load(std::memory_order_acquire);
    const uint64_t s = state_of(word);
    if (s != kArming && s != kArmed && s != kRestoring && s != kReadOnly) continue;
    const uintptr_t start = w.start.load(std::memory_order_relaxed);
    const uintptr_t end = w.end.load(std::memory_order_relaxed);
    if (addr < start || addr >= end) continue;
    // A fault in a window that is still arming is claimed too: the fault shows that the owner's
    // mprotect(PROT_NONE) has taken effect, so a restore now cannot be undone by it. (This also keeps
    // a forked child, which has no owner thread, from waiting for an arm that never ends.)
    if ((s == kArmed || s == kArming) &&
        w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
      // A read leaves the window protected against writes, so that a write in the same cycle counts.
      const bool read_only = !write && t.opt.watch_writes_after_reads;
      if ((read_only ? make_read_only(start, end) : make_accessible(start, end)) != 0) {
        // Cannot restore (should not happen: restoring never needs a new VMA). Retrying would
        // loop forever, so the fault goes to the program. The window stays armed.
        w.word.store(next_word(next_word(word, kRestoring), kArmed), std::memory_order_release);
        return false;
      }
      count_touch(t, w, write);
      st.faults_claimed.fetch_add(1, std::memory_order_relaxed);
      if (read_only) {
        w.word.store(next_word(next_word(word, kRestoring), kReadOnly), std::memory_order_release);
      } else {
        st.armed_now.fetch_sub(1, std::memory_order_relaxed);
        w.word.store(next_word(next_word(word, kRestoring), kRestored), std::memory_order_release);
      }
      return true;
    }
    if (s == kReadOnly) {
      // A read that faulted before the window became readable only needs to run again.
      if (!write) return true;
      if (w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
        if (make_accessible(start, end) != 0) {
          w.word.store(next_word(next_word(word, kRestoring), kReadOnly), std::memory_order_release);
          return false;
        }
        count_dirtied(t, w);
        st.faults_claimed.fetch_add(1, std::memory_order_relaxed);
        st.armed_now.fetch_sub(1, std::memory_order_relaxed);
        w.word.store(next_word(next_word(word, kRestoring), kRestored), std::memory_order_release);
        return true;
      }
      return true;  // someone else changed it meanwhile: the access decides again
    }
    // Restored by another thread (or just claimed by one): wait for its one mprotect call to
    // finish, then retry the access, which either succeeds or faults on an armed window.
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

// Owner only. Returns with the window's pages accessible and the entry restored or free.
void SoftwareSampler::restore_window(Tables& t, Window& w, bool count_as_touch) {
  uint64_t word = w.word.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t s = state_of(word);
    if (s == kFree || s == kRestored) return;
    if ((s == kArmed || s == kReadOnly) &&
        w.word.compare_exchange_weak(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
      make_accessible(w.start.load(std::memory_order_relaxed), w.end.load(std::memory_order_relaxed));
      if (count_as_touch) (s == kArmed ? count_touch(t, w, true) : count_dirtied(t, w));
      t.stats.armed_now.fetch_sub(1, std::memory_order_relaxed);
      w.word.store(next_word(next_word(word, kRestoring), kRestored), std::memory_order_release);
      return;
    }
    if (s == kRestoring || s == kArming) {  // a fault or release() is restoring it: wait for its one
      sched_yield();                         // mprotect call (kArming is the owner's own: not seen here)
      word = w.word.load(std::memory_order_acquire);
    }
    // kArmed or kReadOnly with a failed compare-exchange: `word` was reloaded; look again.
  }
}

void SoftwareSampler::disarm_locked(Tables& t) {
  Stats& st = t.stats;
  const uint32_t n = st.high_water.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    restore_window(t, t.windows[i], false);
    free_entry(t, t.windows[i], i);
  }
  st.high_water.store(0, std::memory_order_release);
  st.epoch.fetch_add(1, std::memory_order_release);
}

void SoftwareSampler::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_.load(std::memory_order_relaxed)) disarm_locked(*tables_.load(std::memory_order_relaxed));
}

size_t SoftwareSampler::arm(const std::vector<SampleRegion>& regions, uint32_t phase) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_.load(std::memory_order_relaxed)) return 0;
  Tables& t = *tables_.load(std::memory_order_relaxed);
  disarm_locked(t);
  Stats& st = t.stats;
  st.arms.fetch_add(1, std::memory_order_relaxed);
  const uint64_t rotation = rotation_++;
  uint32_t used = 0;
  for (const SampleRegion& r : regions) {
    if (r.slot >= t.opt.max_slots || phase >= t.opt.max_phases) {
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
    SlotState& slot = t.slots[r.slot];
    if (slot.window.load(std::memory_order_relaxed) != 0) {
      st.skipped_duplicate.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (used == t.opt.max_windows) {
      st.skipped_capacity.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const uint64_t pages = (last - first) / page_;
    const uint64_t wp = pages < t.opt.window_pages ? pages : t.opt.window_pages;
    // Rotate: consecutive arms of one object sample consecutive windows; objects start spread out.
    const uint64_t k = (rotation + uint64_t{r.slot} * 2654435761u) % (pages / wp);
    const uintptr_t start = first + k * wp * page_;
    Window& w = t.windows[used];
    const uint64_t word = w.word.load(std::memory_order_relaxed);  // free: disarm_locked freed all
    // Seqlock-style: the free state is ordered before the new fields for readers that re-check it.
    std::atomic_thread_fence(std::memory_order_release);
    w.start.store(start, std::memory_order_relaxed);
    w.end.store(start + wp * page_, std::memory_order_relaxed);
    w.slot.store(r.slot, std::memory_order_relaxed);
    w.phase.store(phase, std::memory_order_relaxed);
    w.pages.store(static_cast<uint32_t>(wp), std::memory_order_relaxed);
    w.ticket.store(r.release_ticket, std::memory_order_relaxed);
    // Publish (index, then arming) before reading the release count: a concurrent release() either
    // finds this window or has already counted, which the ticket check below sees.
    slot.window.store(used + 1, std::memory_order_seq_cst);
    const uint64_t arming = next_word(word, kArming);
    w.word.store(arming, std::memory_order_seq_cst);
    st.high_water.store(used + 1, std::memory_order_release);
    if (r.release_ticket != kNoReleaseTicket &&
        slot.releases.load(std::memory_order_seq_cst) != r.release_ticket) {
      st.skipped_released.fetch_add(1, std::memory_order_relaxed);
      w.word.store(next_word(arming, kRestored), std::memory_order_release);  // nothing was protected
      free_entry(t, w, used);
      continue;  // the entry is reused
    }
    st.armed_now.fetch_add(1, std::memory_order_seq_cst);  // before the protection (armed_now())
    if (os::mprotect(reinterpret_cast<void*>(start), wp * page_, PROT_NONE) != 0) {
      st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
      st.armed_now.fetch_sub(1, std::memory_order_relaxed);
      w.word.store(next_word(arming, kRestored), std::memory_order_release);
      free_entry(t, w, used);
      continue;
    }
    // kArming -> kArmed, unless a fault already claimed the window (then it is armed and touched).
    uint64_t expected = arming;
    w.word.compare_exchange_strong(expected, next_word(arming, kArmed), std::memory_order_acq_rel);
    Counters& c = t.counter(r.slot, phase);
    c.armed.fetch_add(1, std::memory_order_relaxed);
    c.armed_pages.fetch_add(wp, std::memory_order_relaxed);
    st.windows_armed.fetch_add(1, std::memory_order_relaxed);
    ++used;
  }
  return used;
}

size_t SoftwareSampler::rearm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_.load(std::memory_order_relaxed)) return 0;
  Tables& t = *tables_.load(std::memory_order_relaxed);
  Stats& st = t.stats;
  st.rearms.fetch_add(1, std::memory_order_relaxed);
  const uint32_t n = st.high_water.load(std::memory_order_relaxed);
  size_t rearmed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    Window& w = t.windows[i];
    uint64_t word = w.word.load(std::memory_order_acquire);
    if (state_of(word) == kReadOnly) {  // a new cycle: reads are counted again
      restore_window(t, w, false);
      word = w.word.load(std::memory_order_acquire);
    }
    // Only touched (or I/O-restored) windows: an untouched one is still armed. A window restored by
    // release() has a new release ticket and stays unprotected, like a region released before arm().
    if (state_of(word) != kRestored) continue;
    const uint64_t arming = next_word(word, kArming);
    if (!w.word.compare_exchange_strong(word, arming, std::memory_order_seq_cst)) continue;
    const uint32_t slot = w.slot.load(std::memory_order_relaxed);
    const uint64_t ticket = w.ticket.load(std::memory_order_relaxed);
    if (ticket != kNoReleaseTicket && t.slots[slot].releases.load(std::memory_order_seq_cst) != ticket) {
      w.word.store(next_word(arming, kRestored), std::memory_order_release);
      continue;
    }
    const uintptr_t start = w.start.load(std::memory_order_relaxed);
    const uintptr_t end = w.end.load(std::memory_order_relaxed);
    st.armed_now.fetch_add(1, std::memory_order_seq_cst);  // before the protection (armed_now())
    if (os::mprotect(reinterpret_cast<void*>(start), end - start, PROT_NONE) != 0) {
      st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
      st.armed_now.fetch_sub(1, std::memory_order_relaxed);
      w.word.store(next_word(arming, kRestored), std::memory_order_release);
      continue;
    }
    uint64_t expected = arming;  // a fault may already have claimed it (then it is touched again)
    w.word.compare_exchange_strong(expected, next_word(arming, kArmed), std::memory_order_acq_rel);
    counters_of(t, w).rearmed.fetch_add(1, std::memory_order_relaxed);
    st.windows_rearmed.fetch_add(1, std::memory_order_relaxed);
    ++rearmed;
  }
  return rearmed;
}

void SoftwareSampler::release(uint32_t slot) {
  Tables* t = tables_.load(std::memory_order_acquire);
  if (t == nullptr || slot >= t->opt.max_slots) return;
  SlotState& state = t->slots[slot];
  state.releases.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t index = state.window.load(std::memory_order_seq_cst);
  if (index == 0) return;
  Window& w = t->windows[index - 1];
  for (;;) {
    uint64_t word = w.word.load(std::memory_order_seq_cst);
    const uint64_t s = state_of(word);
    if (s == kFree || s == kRestored) return;  // pages accessible
    const uint32_t owner = w.slot.load(std::memory_order_relaxed);
    const uintptr_t start = w.start.load(std::memory_order_relaxed);
    const uintptr_t end = w.end.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (w.word.load(std::memory_order_relaxed) != word) continue;  // changed while reading: again
    // The entry now belongs to another slot: this slot's window was restored and freed by the owner.
    if (owner != slot) return;
    if (s == kArming) {  // the owner's mprotect(PROT_NONE) is in flight; a restore now would be undone
      sched_yield();
      continue;
    }
    if (s == kRestoring) {  // a fault or the owner restores it; make sure before the memory is reused
      make_accessible(start, end);
      return;
    }
    if (w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
      make_accessible(start, end);
      t->stats.armed_now.fetch_sub(1, std::memory_order_relaxed);
      t->stats.releases_restored.fetch_add(1, std::memory_order_relaxed);
      w.word.store(next_word(next_word(word, kRestoring), kRestored), std::memory_order_release);
      return;
    }
  }
}

uint64_t SoftwareSampler::release_ticket(uint32_t slot) const {
  const Tables* t = tables_.load(std::memory_order_acquire);
  if (t == nullptr || slot >= t->opt.max_slots) return kNoReleaseTicket;
  return t->slots[slot].releases.load(std::memory_order_seq_cst);
}

uint64_t SoftwareSampler::armed_now() const noexcept {
  const Tables* t = tables_.load(std::memory_order_acquire);
  return t == nullptr ? 0 : t->stats.armed_now.load(std::memory_order_acquire);
}

bool SoftwareSampler::unprotect_for_io(uintptr_t addr, size_t len) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  // The owner holds the lock while it arms (an mprotect per window): yield to it a while, then give up.
  for (int attempt = 0; !lock.owns_lock() && attempt < 256; ++attempt) {
    sched_yield();
    lock.try_lock();
  }
  if (!lock.owns_lock()) return false;
  restore_overlapping(addr, len, /*count_as_touch=*/true);
  return true;
}

void SoftwareSampler::unprotect(uintptr_t addr, size_t len, bool count_as_touch) {
  std::lock_guard<std::mutex> lock(mu_);
  restore_overlapping(addr, len, count_as_touch);
}

void SoftwareSampler::restore_overlapping(uintptr_t addr, size_t len, bool count_as_touch) {
  if (!started_.load(std::memory_order_relaxed) || len == 0) return;
  Tables& t = *tables_.load(std::memory_order_relaxed);
  const uintptr_t end = len > SIZE_MAX - addr ? SIZE_MAX : addr + len;
  const uint32_t n = t.stats.high_water.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    Window& w = t.windows[i];
    if (state_of(w.word.load(std::memory_order_acquire)) == kFree) continue;
    if (w.start.load(std::memory_order_relaxed) < end && addr < w.end.load(std::memory_order_relaxed)) {
      restore_window(t, w, count_as_touch);
    }
  }
}

WindowCounts SoftwareSampler::counts(uint32_t slot, uint32_t phase) const {
  std::lock_guard<std::mutex> lock(mu_);
  WindowCounts out;
  Tables* t = tables_.load(std::memory_order_relaxed);
  if (t == nullptr || slot >= t->opt.max_slots || phase >= t->opt.max_phases) return out;
  const Counters& c = t->counter(slot, phase);
  out.armed = c.armed.load(std::memory_order_relaxed);
  out.touched = c.touched.load(std::memory_order_relaxed);
  out.written = c.written.load(std::memory_order_relaxed);
  out.dirtied = c.dirtied.load(std::memory_order_relaxed);
  out.armed_pages = c.armed_pages.load(std::memory_order_relaxed);
  out.rearmed = c.rearmed.load(std::memory_order_relaxed);
  return out;
}

void SoftwareSampler::reset_counts() {
  std::lock_guard<std::mutex> lock(mu_);
  if (Tables* t = tables_.load(std::memory_order_relaxed); t != nullptr) zero_counters(*t);
}

SoftwareSamplerStats SoftwareSampler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SoftwareSamplerStats out;
  const Tables* t = tables_.load(std::memory_order_relaxed);
  if (t == nullptr) return out;
  const Stats& s = t->stats;
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
  out.skipped_released = s.skipped_released.load();
  out.skipped_duplicate = s.skipped_duplicate.load();
  out.releases_restored = s.releases_restored.load();
  out.rearms = s.rearms.load();
  out.windows_rearmed = s.windows_rearmed.load();
  return out;
}

}  // namespace sentinel
