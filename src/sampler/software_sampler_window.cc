// The software sampler's window protocol: what runs in the SIGSEGV handler (claim) and inside free()
// (release), and the owner's restores. Lock-free and async-signal-safe; software_sampler.h states the
// protocol, software_sampler_internal.h the tables.
#include <ucontext.h>

#include <cerrno>

#include "os/spin_lock.h"
#include "sampler/software_sampler_internal.h"

namespace sentinel {

using namespace software_sampler_internal;

namespace {

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

// Async-signal-safe, like claim(). A fault no armed window claimed (after its retry) that would kill the
// program. If a window of the sampler (in use or not: a freed entry keeps the range it last covered) holds
// the address, the page is one the sampler protected and a restore of it was lost: a vit_b_16 managed dry
// run died of such a fault, in a restored window (state 4) whose page was still protected; the cause is not
// found (docs/profiler.md). The page is made accessible and the access runs again, counted. Only when the
// fault would be fatal: a program with its own SIGSEGV handler may have protected the page itself and gets
// the fault, as before.
bool SoftwareSampler::repair_lost_restore(Tables& t, uintptr_t addr) {
  const uint32_t n = t.entries();
  for (uint32_t i = 0; i < n; ++i) {
    const Window& w = t.windows[i];
    if (addr < w.start.load(std::memory_order_relaxed) || addr >= w.end.load(std::memory_order_relaxed)) continue;
    const uintptr_t page = addr / page_ * page_;
    if (make_accessible(page, page + page_) != 0) {
      t.stats.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    t.stats.faults_repaired.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

// Async-signal-safe. A fault in the pages of a window whose state says they are accessible (restored) or
// readable (read-only): they get that protection, under the claim protocol (a window that changed
// meanwhile is left to the access's next fault). True: the access runs again; false when the kernel refuses
// (the fault then goes on, as the retry would only fault again).
bool SoftwareSampler::repair_to_state(Tables& t, Window& w, uint64_t word, uintptr_t start, uintptr_t end) {
  const uint64_t s = state_of(word);
  if (!w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
    return true;  // changed meanwhile: the access decides again
  }
  const bool repaired = (s == kRestored ? make_accessible(start, end) : make_read_only(start, end)) == 0;
  (repaired ? t.stats.faults_repaired : t.stats.mprotect_failures).fetch_add(1, std::memory_order_relaxed);
  w.word.store(next_word(next_word(word, kRestoring), s), std::memory_order_release);
  return repaired;
}

// Async-signal-safe. Returns true if the faulting access should simply be retried.
bool SoftwareSampler::claim(Tables& t, uintptr_t addr, void* ucontext) {
  Stats& st = t.stats;
  const uint64_t epoch = st.epoch.load(std::memory_order_acquire);
  const bool write = fault_was_write(ucontext);
  Window* restored = nullptr;  // the first restored window over the address
  for (const Tables::EntryRange& range : t.in_use()) for (uint32_t i = range.begin; i < range.end; ++i) {
    Window& w = t.windows[i];
    uint64_t word = w.word.load(std::memory_order_acquire);
    const uint64_t s = state_of(word);
    if (s != kArming && s != kArmed && s != kRestoring && s != kReadOnly && s != kRestored) continue;
    const uintptr_t start = w.start.load(std::memory_order_relaxed);
    const uintptr_t end = w.end.load(std::memory_order_relaxed);
    if (addr < start || addr >= end) continue;
    if (s == kRestored) {  // only if no window claims the fault (below)
      if (restored == nullptr) restored = &w;
      continue;
    }
    // A fault in a window that is still arming is claimed too: usually the fault shows that the owner's
    // mprotect(PROT_NONE) has taken effect. A fault the kernel delivered late (from the window's previous
    // arming) may be claimed before that mprotect instead; the owner, whose compare-exchange to kArmed then
    // fails, gives the pages the state's protection again (settle_claimed_while_arming). (Claiming kArming
    // also keeps a forked child, which has no owner thread, from waiting for an arm that never ends.)
    if ((s == kArmed || s == kArming) &&
        w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
      // A read leaves the window protected against writes, so that a write in the same cycle counts.
      const bool read_only = !write && t.opt.watch_writes_after_reads;
      if ((read_only ? make_read_only(start, end) : make_accessible(start, end)) != 0) {
        st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
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
      // A read faulted on a read-only window: its pages are protected beyond the state (as above, or the
      // fault came before the claim made them readable): given the state's protection, and run again.
      if (!write) return repair_to_state(t, w, word, start, end);
      if (w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
        if (make_accessible(start, end) != 0) {
          st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
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
    while (state_of(w.word.load(std::memory_order_acquire)) == kRestoring) os::yield_cpu();
    return true;
  }
  if (restored != nullptr) {
    // Restored, yet the access faulted: the pages are protected under a restored state. That is Sentinel's
    // own doing: a claim whose restore ran before an arming's mprotect(PROT_NONE), until the arming thread
    // settles the window (settle_claimed_while_arming), or a fault the kernel delivered late. Before, the
    // access was retried once and then went to the program, fatal for one with its own SIGSEGV handler (a
    // U-Net in a managed dry run under Python's faulthandler died of it in about 1 run of 10; the arming
    // thread can be descheduled for milliseconds). A program that protects sampled pages itself would not
    // see this fault; repair_lost_restore() leaves it those of windows no longer in use.
    const uint64_t word = restored->word.load(std::memory_order_acquire);
    if (state_of(word) != kRestored) return true;  // changed meanwhile: the access decides again
    return repair_to_state(t, *restored, word, restored->start.load(std::memory_order_relaxed),
                           restored->end.load(std::memory_order_relaxed));
  }
  // Not in a window in use. It may have been restored between the fault and this scan: retry once.
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
      // A refused restore leaves the pages protected under a restored state: counted, so that a fault
      // on them later (repaired or fatal) can be told from a lost restore of another kind.
      if (make_accessible(w.start.load(std::memory_order_relaxed), w.end.load(std::memory_order_relaxed)) != 0) {
        t.stats.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
      }
      if (count_as_touch) (s == kArmed ? count_touch(t, w, true) : count_dirtied(t, w));
      t.stats.armed_now.fetch_sub(1, std::memory_order_relaxed);
      w.word.store(next_word(next_word(word, kRestoring), kRestored), std::memory_order_release);
      return;
    }
    if (s == kRestoring || s == kArming || s == kReserved) {
      // A fault or release() is restoring it, or an allocating thread arming it (arm_birth; the owner's own
      // kArming is not seen here): wait for that one mprotect call.
      os::yield_cpu();
      word = w.word.load(std::memory_order_acquire);
    }
    // kArmed or kReadOnly with a failed compare-exchange: `word` was reloaded; look again.
  }
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
    // Free or restored: the pages are accessible. Reserved: an allocating thread is setting the entry up for
    // a new object (arm_birth); this slot's window, if it was this entry, was restored and freed before.
    if (s == kFree || s == kRestored || s == kReserved) return;
    const uint32_t owner = w.slot.load(std::memory_order_relaxed);
    const uintptr_t start = w.start.load(std::memory_order_relaxed);
    const uintptr_t end = w.end.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (w.word.load(std::memory_order_relaxed) != word) continue;  // changed while reading: again
    // The entry now belongs to another slot: this slot's window was restored and freed by the owner.
    if (owner != slot) return;
    if (s == kArming) {  // the owner's mprotect(PROT_NONE) is in flight; a restore now would be undone
      os::yield_cpu();
      continue;
    }
    if (s == kRestoring) {  // a fault or the owner restores it; make sure before the memory is reused
      if (make_accessible(start, end) != 0) t->stats.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) {
      if (make_accessible(start, end) != 0) t->stats.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
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

uintptr_t SoftwareSampler::begin_io(uintptr_t addr, size_t len) {
  // Before, the sampler's lock was tried 256 times, the windows restored under it, and the call made
  // after: the lock could stay taken (EFAULT for the program's read()) and a rearm between the restore
  // and the call protected the buffer again (a short write, a short read: IoBuffers failed in 1 of 8 to
  // 7 of 10 runs on a loaded machine). Now: the guard first, then the fault's claim protocol (claim()
  // above) for every window the buffer overlaps, without the lock.
  if (!started_.load(std::memory_order_acquire) || len == 0) return 0;
  Tables* tables = tables_.load(std::memory_order_acquire);
  if (tables == nullptr) return 0;
  Tables& t = *tables;
  const uintptr_t end = len > SIZE_MAX - addr ? SIZE_MAX : addr + len;
  uintptr_t token = 0;  // the guard's address: tables are never freed while the sampler exists
  for (uint32_t k = 0; k < kIoGuards && token == 0; ++k) {
    uint32_t idle = 0;
    if (t.io[k].busy.load(std::memory_order_relaxed) == 0 &&
        t.io[k].busy.compare_exchange_strong(idle, 1, std::memory_order_acquire)) {
      t.io[k].lo.store(addr, std::memory_order_relaxed);
      t.io[k].hi.store(end, std::memory_order_relaxed);
      t.io[k].active.store(1, std::memory_order_seq_cst);  // before the windows are read (IoGuard)
      token = reinterpret_cast<uintptr_t>(&t.io[k]);
    }
  }
  if (token == 0) t.stats.io_unguarded.fetch_add(1, std::memory_order_relaxed);
  // kArming and kRestoring last one mprotect call of another thread; a bounded wait, so that a handler
  // that interrupted that very thread cannot wait for it forever (the call may then see EFAULT).
  constexpr int kMaxWaits = 1 << 14;
  for (const Tables::EntryRange& range : t.in_use()) for (uint32_t i = range.begin; i < range.end; ++i) {
    Window& w = t.windows[i];
    for (int waits = 0;;) {
      uint64_t word = w.word.load(std::memory_order_seq_cst);
      const uint64_t s = state_of(word);
      if (s == kFree || s == kRestored || s == kReserved) break;  // reserved: a new object, not the buffer
      const uintptr_t start = w.start.load(std::memory_order_relaxed);
      const uintptr_t stop = w.end.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (w.word.load(std::memory_order_relaxed) != word) continue;  // reused while reading: again
      if (start >= end || addr >= stop) break;                       // not in the buffer
      if (s == kArmed || s == kReadOnly) {
        if (!w.word.compare_exchange_strong(word, next_word(word, kRestoring), std::memory_order_acq_rel)) continue;
        if (make_accessible(start, stop) != 0) {  // should not happen (no new VMA needed)
          w.word.store(next_word(next_word(word, kRestoring), s), std::memory_order_release);
          break;
        }
        // The caller is about to access the buffer: a touch (written) in its phase.
        (s == kArmed ? count_touch(t, w, true) : count_dirtied(t, w));
        t.stats.armed_now.fetch_sub(1, std::memory_order_relaxed);
        w.word.store(next_word(next_word(word, kRestoring), kRestored), std::memory_order_release);
        break;
      }
      if (++waits > kMaxWaits) break;
      os::yield_cpu();
    }
  }
  return token;
}

void SoftwareSampler::end_io(uintptr_t token) {
  if (token == 0) return;
  IoGuard& g = *reinterpret_cast<IoGuard*>(token);
  g.active.store(0, std::memory_order_release);
  g.busy.store(0, std::memory_order_release);
}

void SoftwareSampler::unprotect(uintptr_t addr, size_t len, bool count_as_touch) {
  std::lock_guard<std::mutex> lock(mu_);
  restore_overlapping(addr, len, count_as_touch);
}

void SoftwareSampler::restore_overlapping(uintptr_t addr, size_t len, bool count_as_touch) {
  if (!started_.load(std::memory_order_relaxed) || len == 0) return;
  Tables& t = *tables_.load(std::memory_order_relaxed);
  const uintptr_t end = len > SIZE_MAX - addr ? SIZE_MAX : addr + len;
  for (const Tables::EntryRange& range : t.in_use()) for (uint32_t i = range.begin; i < range.end; ++i) {
    Window& w = t.windows[i];
    const uint64_t s = state_of(w.word.load(std::memory_order_acquire));
    if (s == kFree || s == kReserved) continue;
    if (w.start.load(std::memory_order_relaxed) < end && addr < w.end.load(std::memory_order_relaxed)) {
      restore_window(t, w, count_as_touch);
    }
  }
}

}  // namespace sentinel
