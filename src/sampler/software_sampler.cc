#include "sampler/software_sampler.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/text_buf.h"
#include "os/os.h"
#include "os/spin_lock.h"
#include "sampler/segv_chain.h"
#include "sampler/software_sampler_internal.h"

namespace sentinel {

using namespace software_sampler_internal;

namespace {

std::atomic<SoftwareSampler*> g_active{nullptr};

// Where an instruction address lies: "module+0xoffset" (_dl_find_object is async-signal-safe), or the bare
// address.
void put_code_address(TextBuf& out, uintptr_t pc) {
  dl_find_object found;
  if (pc != 0 && _dl_find_object(reinterpret_cast<void*>(pc), &found) == 0 && found.dlfo_link_map != nullptr) {
    const link_map* map = found.dlfo_link_map;
    out.put(map->l_name != nullptr && map->l_name[0] != '\0' ? map->l_name : "<main program>");
    out.put("+").put_hex(pc - map->l_addr);
    return;
  }
  out.put_hex(pc);
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
SoftwareSampler::~SoftwareSampler() {
  stop();
  hand_back_segv();
}

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
  if (options.max_windows >= (uint32_t{1} << 30) || options.birth_windows >= (uint32_t{1} << 30)) {
    return fail("max_windows or birth_windows is too large");
  }
  // A stopped sampler still holds the kernel slot (stop() says why): a restart of it, or the start of
  // another sampler while it is stopped, keeps the slot with the handler in it and takes g_active over.
  SoftwareSampler* previous = g_active.load(std::memory_order_acquire);
  for (;;) {
    if (previous != nullptr && previous != this && previous->started()) return fail("another sampler owns SIGSEGV");
    if (g_active.compare_exchange_weak(previous, this, std::memory_order_acq_rel)) break;
  }
  const bool holding = previous != nullptr;  // the kernel slot is the handler's already
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  Tables* t = tables_.load(std::memory_order_relaxed);
  if (t != nullptr && t->opt.max_slots == options.max_slots && t->opt.max_phases == options.max_phases &&
      t->opt.max_windows == options.max_windows && t->opt.birth_windows == options.birth_windows) {
    // Reuse: stop() left every entry free and no window protected. A release() from before the
    // restart may still be reading these tables; it finds nothing to restore.
    t->opt.window_pages = options.window_pages;
    zero_counters(*t);
    Stats& st = t->stats;
    for (auto* c : {&st.arms, &st.windows_armed, &st.skipped_small, &st.skipped_range, &st.skipped_capacity,
                    &st.mprotect_failures, &st.faults_claimed, &st.faults_retried, &st.faults_repaired, &st.faults_chained,
                    &st.skipped_released, &st.skipped_duplicate, &st.releases_restored, &st.rearms, &st.skipped_io, &st.io_unguarded,
                    &st.windows_rearmed, &st.births_armed, &st.births_skipped}) {
      c->store(0, std::memory_order_relaxed);
    }
  } else {
    // New sizes (or the first start): new tables. Old ones stay allocated until destruction, since a
    // late release() may still hold a pointer to them.
    std::unique_ptr<Tables> fresh(new (std::nothrow) Tables);
    if (fresh != nullptr) {
      fresh->opt = options;
      fresh->windows.reset(new (std::nothrow) Window[uint64_t{options.max_windows} + options.birth_windows]);
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
      g_active.store(previous);  // the slot stays with whoever held it
      return fail("out of memory for the tables");
    }
    t = owned_.back().get();
    tables_.store(t, std::memory_order_release);
  }
  t->opt.clock = options.clock;
  t->clock.store(options.clock, std::memory_order_relaxed);
  t->touches.clear();
  try {
    t->touches.reserve(2 * size_t{options.max_windows});  // a cycle's touch per window, twice over
  } catch (const std::bad_alloc&) {
  }
  if (!holding) {
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
  }
  started_.store(true, std::memory_order_release);
  return true;
}

void SoftwareSampler::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_.load(std::memory_order_relaxed)) return;
  // seq_cst, before the disarm: arm_birth() re-reads it after its mprotect; either it sees the stop and
  // restores its window, or this disarm sees the window.
  started_.store(false, std::memory_order_seq_cst);
  disarm_locked(*tables_.load(std::memory_order_relaxed));
  // The kernel slot stays this sampler's. A thread that faulted on a window just before the disarm may
  // take the signal only now (it was preempted between the fault and the delivery, or its handler has not
  // read g_active yet): the kernel picks the disposition at delivery, so with the slot handed back here
  // the program's SIG_DFL would kill it for an access that is fine once run again. The handler, finding
  // no window, retries such a fault once (claim()); faults that are the program's still reach its
  // disposition, after that one retry. Only the destructor hands the slot back.
}

void SoftwareSampler::hand_back_segv() {
  SoftwareSampler* self = this;
  if (!g_active.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel)) return;
  // A handler that loaded g_active just before may still be scanning the tables: they are freed only with
  // the object, after this.
  SegvChain::hand_back();
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
  const bool fatal = SegvChain::fault_is_fatal(info);
  if (t != nullptr && fatal && info->si_code == SEGV_ACCERR &&
      self->repair_lost_restore(*t, reinterpret_cast<uintptr_t>(info->si_addr))) {
    errno = saved_errno;
    return;
  }
  if (t != nullptr) t->stats.faults_chained.fetch_add(1, std::memory_order_relaxed);
  if (fatal) note_fatal_fault(t, info, ucontext);
  SegvChain::deliver(sig, info, ucontext);
  errno = saved_errno;
}


void SoftwareSampler::note_fatal_fault(const Tables* t, const siginfo_t* info, const void* ucontext) {
  // A crash of the program while the sampler holds SIGSEGV says on stderr whether a window was involved:
  // without this line, a program killed by SIGSEGV under Sentinel leaves no word of where.
  char line[640];
  TextBuf out(line, sizeof line - 1);  // room for the newline
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  out.put("sentinel: SIGSEGV (");
  if (info->si_code == SEGV_ACCERR) {
    out.put("protection fault");
  } else if (info->si_code == SEGV_MAPERR) {
    out.put("unmapped address");
  } else {
    out.put("code ").put_signed(info->si_code);
  }
  out.put(") at ").put_hex(addr);
#if defined(__x86_64__)
  if (ucontext != nullptr) {
    out.put(", instruction at ");
    put_code_address(out, static_cast<uintptr_t>(static_cast<const ucontext_t*>(ucontext)->uc_mcontext.gregs[REG_RIP]));
  }
#else
  (void)ucontext;
#endif
  if (t != nullptr) {
    // Every entry, in use or not: a freed entry keeps the range it last covered.
    const uint32_t n = t->entries();
    uint32_t in_window = n;
    for (uint32_t i = 0; i < n && in_window == n; ++i) {
      const Window& w = t->windows[i];
      if (addr >= w.start.load(std::memory_order_relaxed) && addr < w.end.load(std::memory_order_relaxed)) in_window = i;
    }
    if (in_window != n) {
      const Window& w = t->windows[in_window];
      out.put("; the address is in software-sampler window ").put(uint64_t{in_window});
      out.put(" of ").put(uint64_t{t->stats.high_water.load(std::memory_order_acquire)}).put(" in use");
      out.put(" (state ").put(state_of(w.word.load(std::memory_order_acquire)));
      out.put(", object slot ").put(uint64_t{w.slot.load(std::memory_order_relaxed)});
      out.put(", ").put(t->stats.armed_now.load(std::memory_order_relaxed)).put(" armed, ");
      out.put(t->stats.mprotect_failures.load(std::memory_order_relaxed)).put(" mprotect failures");
      out.put("), protected by Sentinel or just restored");
    } else {
      out.put("; not in a software-sampler window (").put(t->stats.armed_now.load(std::memory_order_relaxed));
      out.put(" armed)");
    }
  }
  out.put("; the program's default action follows");
  line[out.size()] = '\n';
  write_all(STDERR_FILENO, line, out.size() + 1);
}

void SoftwareSampler::settle_claimed_while_arming(Window& w, uintptr_t start, uintptr_t end) {
  // A fault claimed the window while it was arming (claim() takes kArming windows too). That fault may be
  // one the kernel delivered late (the thread faulted on the window's previous arming, was preempted, and
  // its handler ran only after the window was restored and armed again, before this arming's mprotect):
  // then its restore ran before our mprotect(PROT_NONE), and the pages are protected while the state says
  // restored (or read-only). Nothing would ever restore them: a later disarm skips a restored window, and
  // the program's next access is a fault no window claims, fatal (seen in the two-node guest's soak, 2 of 8
  // runs). So the owner takes the window once more and gives the pages the protection its state names.
  // Only claim() changes a window from kArming (release() and begin_io() wait for the arming to end).
  for (;;) {
    uint64_t word = w.word.load(std::memory_order_acquire);
    const uint64_t s = state_of(word);
    if (s == kRestoring) {  // the claim's own mprotect is still running
      os::yield_cpu();
      continue;
    }
    if (s != kRestored && s != kReadOnly) return;  // not reachable: only the owner arms or frees
    if (!w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) continue;
    if (s == kRestored) {
      make_accessible(start, end);
    } else {
      make_read_only(start, end);
    }
    w.word.store(next_word(next_word(word, kRestoring), s), std::memory_order_release);
    return;
  }
}

void SoftwareSampler::disarm_locked(Tables& t) {
  Stats& st = t.stats;
  for (const Tables::EntryRange& range : t.in_use()) for (uint32_t i = range.begin; i < range.end; ++i) {
    restore_window(t, t.windows[i], false);
    collect_touch(t, t.windows[i]);
    free_entry(t, t.windows[i], i);
  }
  st.high_water.store(0, std::memory_order_release);
  st.epoch.fetch_add(1, std::memory_order_release);
}

void SoftwareSampler::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_.load(std::memory_order_relaxed)) disarm_locked(*tables_.load(std::memory_order_relaxed));
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
  out.faults_repaired = s.faults_repaired.load();
  out.faults_chained = s.faults_chained.load();
  out.skipped_released = s.skipped_released.load();
  out.skipped_io = s.skipped_io.load();
  out.io_unguarded = s.io_unguarded.load();
  out.skipped_duplicate = s.skipped_duplicate.load();
  out.releases_restored = s.releases_restored.load();
  out.rearms = s.rearms.load();
  out.windows_rearmed = s.windows_rearmed.load();
  out.births_armed = s.births_armed.load();
  out.births_skipped = s.births_skipped.load();
  return out;
}

}  // namespace sentinel
