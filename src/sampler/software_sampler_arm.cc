// The software sampler's arming (software_sampler.h): arm() over every live region, add() for new ones,
// arm_birth() from the allocating thread, rearm() within a phase, and the touches they collect. The
// window protocol these follow is in the header; start, stop, the signal handler and statistics are in
// software_sampler.cc, the handler's claim and release() in software_sampler_window.cc.
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "os/os.h"
#include "sampler/software_sampler.h"
#include "sampler/software_sampler_internal.h"

namespace sentinel {

using namespace software_sampler_internal;

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
    if (r.slot < t.opt.max_slots && t.slots[r.slot].window.load(std::memory_order_relaxed) != 0) {
      st.skipped_duplicate.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (used == t.opt.max_windows) {
      st.skipped_capacity.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (arm_entry(t, used, r, phase, rotation)) ++used;  // else the entry is free again and reused
  }
  return used;
}

size_t SoftwareSampler::add(const std::vector<SampleRegion>& regions, uint32_t phase) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_.load(std::memory_order_relaxed)) return 0;
  Tables& t = *tables_.load(std::memory_order_relaxed);
  Stats& st = t.stats;
  // A released slot's entry (restored, its release ticket moved on) is closed and freed: the slot may
  // hold a new object now, and the entry can be used again.
  for (const Tables::EntryRange& range : t.in_use()) for (uint32_t i = range.begin; i < range.end; ++i) {
    Window& w = t.windows[i];
    if (state_of(w.word.load(std::memory_order_acquire)) != kRestored) continue;
    const uint64_t ticket = w.ticket.load(std::memory_order_relaxed);
    if (ticket == kNoReleaseTicket ||
        t.slots[w.slot.load(std::memory_order_relaxed)].releases.load(std::memory_order_seq_cst) == ticket) {
      continue;
    }
    collect_touch(t, w);
    free_entry(t, w, i);
  }
  size_t armed = 0;
  uint32_t next_free = 0;
  for (const SampleRegion& r : regions) {
    if (r.slot < t.opt.max_slots && t.slots[r.slot].window.load(std::memory_order_relaxed) != 0) continue;
    while (next_free < t.opt.max_windows &&
           state_of(t.windows[next_free].word.load(std::memory_order_acquire)) != kFree) {
      ++next_free;
    }
    if (next_free == t.opt.max_windows) {
      st.skipped_capacity.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (arm_entry(t, next_free, r, phase, kLastWindow)) ++armed;
  }
  return armed;
}

bool SoftwareSampler::arm_entry(Tables& t, uint32_t index, const SampleRegion& r, uint32_t phase, uint64_t rotation) {
  Stats& st = t.stats;
  if (r.slot >= t.opt.max_slots || phase >= t.opt.max_phases) {
    st.skipped_range.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // Only whole pages inside the region: a window must never cover another object's bytes.
  const uintptr_t first = (r.addr + page_ - 1) / page_ * page_;
  const uintptr_t last = r.len > SIZE_MAX - r.addr ? 0 : (r.addr + r.len) / page_ * page_;
  if (first < r.addr || last <= first) {
    st.skipped_small.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  SlotState& slot = t.slots[r.slot];
  const uint64_t pages = (last - first) / page_;
  const uint64_t wp = pages < t.opt.window_pages ? pages : t.opt.window_pages;
  // Rotate: consecutive arms of one object sample consecutive windows; objects start spread out. A new
  // object's window (add()) is its last: the owner arms it a while after the allocation, and the kernel
  // that allocated an output is by then writing it from its first byte on, so the last page is the one
  // most likely still ahead of that first pass.
  const uint64_t k = rotation == kLastWindow ? pages / wp / 2 : (rotation + uint64_t{r.slot} * 2654435761u) % (pages / wp);
  const uintptr_t start = first + k * wp * page_;
  Window& w = t.windows[index];
  const uint64_t word = w.word.load(std::memory_order_relaxed);  // free (the caller found or made it so)
  // Seqlock-style: the free state is ordered before the new fields for readers that re-check it.
  std::atomic_thread_fence(std::memory_order_release);
  w.start.store(start, std::memory_order_relaxed);
  w.end.store(start + wp * page_, std::memory_order_relaxed);
  w.slot.store(r.slot, std::memory_order_relaxed);
  w.phase.store(phase, std::memory_order_relaxed);
  w.pages.store(static_cast<uint32_t>(wp), std::memory_order_relaxed);
  w.ticket.store(r.release_ticket, std::memory_order_relaxed);
  w.touch_flags.store(0, std::memory_order_relaxed);
  // Publish (index, then arming) before reading the release count: a concurrent release() either
  // finds this window or has already counted, which the ticket check below sees.
  // Only into an empty index: the caller saw none, but an allocating thread may have armed the slot's next
  // life since (arm_birth). release() restores the one window the index names, so overwriting it (and then
  // freeing this entry when the ticket check below fails) left that birth window protected on a freed
  // extent, where a later remap of its pages (realloc) would carry the protection out of every window.
  uint32_t no_window = 0;
  if (!slot.window.compare_exchange_strong(no_window, index + 1, std::memory_order_seq_cst)) {
    st.skipped_duplicate.fetch_add(1, std::memory_order_relaxed);
    return false;  // never published: the entry is still free
  }
  const uint64_t arming = next_word(word, kArming);
  w.word.store(arming, std::memory_order_seq_cst);
  if (st.high_water.load(std::memory_order_relaxed) < index + 1) st.high_water.store(index + 1, std::memory_order_release);
  if (r.release_ticket != kNoReleaseTicket && slot.releases.load(std::memory_order_seq_cst) != r.release_ticket) {
    st.skipped_released.fetch_add(1, std::memory_order_relaxed);
    w.word.store(next_word(arming, kRestored), std::memory_order_release);  // nothing was protected
    free_entry(t, w, index);
    return false;
  }
  if (t.io_overlaps(start, start + wp * page_)) {  // a program's read() or write() is using these pages
    st.skipped_io.fetch_add(1, std::memory_order_relaxed);
    w.word.store(next_word(arming, kRestored), std::memory_order_release);
    free_entry(t, w, index);
    return false;
  }
  st.armed_now.fetch_add(1, std::memory_order_seq_cst);  // before the protection (armed_now())
  if (os::mprotect(reinterpret_cast<void*>(start), wp * page_, PROT_NONE) != 0) {
    st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
    st.armed_now.fetch_sub(1, std::memory_order_relaxed);
    w.word.store(next_word(arming, kRestored), std::memory_order_release);
    free_entry(t, w, index);
    return false;
  }
  // kArming -> kArmed, unless a fault already claimed the window (then it is armed and touched).
  uint64_t expected = arming;
  if (!w.word.compare_exchange_strong(expected, next_word(arming, kArmed), std::memory_order_acq_rel)) {
    settle_claimed_while_arming(w, start, start + wp * page_);
  }
  Counters& c = t.counter(r.slot, phase);
  c.armed.fetch_add(1, std::memory_order_relaxed);
  c.armed_pages.fetch_add(wp, std::memory_order_relaxed);
  st.windows_armed.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool SoftwareSampler::arm_birth(const SampleRegion& r) {
  if (!started_.load(std::memory_order_seq_cst)) return false;
  Tables* tables = tables_.load(std::memory_order_acquire);
  if (tables == nullptr || tables->opt.birth_windows == 0 || r.slot >= tables->opt.max_slots) return false;
  Tables& t = *tables;
  Stats& st = t.stats;
  const uintptr_t first = (r.addr + page_ - 1) / page_ * page_;
  const uintptr_t last = r.len > SIZE_MAX - r.addr ? 0 : (r.addr + r.len) / page_ * page_;
  if (first < r.addr || last <= first) return false;
  // The lowest free birth entry, taken with a compare-exchange (the owner frees birth entries, never takes
  // one). Lowest: every fault scans the birth entries up to the highest ever used (birth_high_water).
  const uint32_t births = t.opt.birth_windows;
  const uint32_t from = st.birth_cursor.fetch_add(1, std::memory_order_relaxed);  // places the window
  uint32_t index = 0;
  uint64_t reserved = 0;
  for (uint32_t k = 0; k < births && reserved == 0; ++k) {
    const uint32_t i = t.opt.max_windows + k;
    uint64_t word = t.windows[i].word.load(std::memory_order_acquire);
    if (state_of(word) == kFree &&
        t.windows[i].word.compare_exchange_strong(word, next_word(word, kReserved), std::memory_order_acq_rel)) {
      index = i;
      reserved = next_word(word, kReserved);
    }
  }
  if (reserved == 0) {
    st.births_skipped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Window& w = t.windows[index];
  const uint64_t pages = (last - first) / page_;
  const uint64_t wp = pages < t.opt.window_pages ? pages : t.opt.window_pages;
  // Any page: the window is armed before the program has the object. Spread over the object by slot.
  const uint64_t k = (uint64_t{r.slot} * 2654435761u + from) % (pages / wp);
  const uintptr_t start = first + k * wp * page_, end = start + wp * page_;
  w.start.store(start, std::memory_order_relaxed);
  w.end.store(end, std::memory_order_relaxed);
  w.slot.store(r.slot, std::memory_order_relaxed);
  w.phase.store(0, std::memory_order_relaxed);
  w.pages.store(static_cast<uint32_t>(wp), std::memory_order_relaxed);
  w.ticket.store(r.release_ticket, std::memory_order_relaxed);
  w.touch_flags.store(0, std::memory_order_relaxed);
  for (uint32_t hw = st.birth_high_water.load(std::memory_order_relaxed);
       hw < index - t.opt.max_windows + 1 &&
       !st.birth_high_water.compare_exchange_weak(hw, index - t.opt.max_windows + 1, std::memory_order_acq_rel);) {
  }
  // The slot's index now names this entry (an older entry of the slot, restored by its release(), is
  // freed by the owner later; free_entry's compare-exchange then leaves this index alone).
  t.slots[r.slot].window.store(index + 1, std::memory_order_seq_cst);
  const uint64_t arming = next_word(reserved, kArming);
  w.word.store(arming, std::memory_order_seq_cst);
  st.armed_now.fetch_add(1, std::memory_order_seq_cst);
  if (os::mprotect(reinterpret_cast<void*>(start), end - start, PROT_NONE) != 0) {
    st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
    st.armed_now.fetch_sub(1, std::memory_order_relaxed);
    w.word.store(next_word(arming, kRestored), std::memory_order_release);  // the owner frees it
    return false;
  }
  uint64_t expected = arming;
  if (!w.word.compare_exchange_strong(expected, next_word(arming, kArmed), std::memory_order_acq_rel)) {
    settle_claimed_while_arming(w, start, end);
  }
  if (!started_.load(std::memory_order_seq_cst) || tables_.load(std::memory_order_acquire) != &t) {
    restore_window(t, w, false);  // stopped meanwhile: its disarm may have missed this window
    return false;
  }
  Counters& c = t.counter(r.slot, 0);
  c.armed.fetch_add(1, std::memory_order_relaxed);
  c.armed_pages.fetch_add(wp, std::memory_order_relaxed);
  st.windows_armed.fetch_add(1, std::memory_order_relaxed);
  st.births_armed.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void SoftwareSampler::take_touches(std::vector<WindowTouch>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  Tables* t = tables_.load(std::memory_order_relaxed);
  if (t == nullptr) return;
  out->insert(out->end(), t->touches.begin(), t->touches.end());
  t->touches.clear();
}

size_t SoftwareSampler::rearm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_.load(std::memory_order_relaxed)) return 0;
  Tables& t = *tables_.load(std::memory_order_relaxed);
  Stats& st = t.stats;
  st.rearms.fetch_add(1, std::memory_order_relaxed);
  size_t rearmed = 0;
  for (const Tables::EntryRange& range : t.in_use()) for (uint32_t i = range.begin; i < range.end; ++i) {
    Window& w = t.windows[i];
    uint64_t word = w.word.load(std::memory_order_acquire);
    if (state_of(word) == kReadOnly) {  // a new cycle: reads are counted again
      restore_window(t, w, false);
      word = w.word.load(std::memory_order_acquire);
    }
    // Only touched (or I/O-restored) windows: an untouched one is still armed. A window restored by
    // release() has a new release ticket and stays unprotected, like a region released before arm().
    if (state_of(word) != kRestored) continue;
    collect_touch(t, w);  // the cycle ends here
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
    if (t.io_overlaps(start, end)) {  // a program's I/O call is using these pages: next rearm
      st.skipped_io.fetch_add(1, std::memory_order_relaxed);
      w.word.store(next_word(arming, kRestored), std::memory_order_release);
      continue;
    }
    st.armed_now.fetch_add(1, std::memory_order_seq_cst);  // before the protection (armed_now())
    if (os::mprotect(reinterpret_cast<void*>(start), end - start, PROT_NONE) != 0) {
      st.mprotect_failures.fetch_add(1, std::memory_order_relaxed);
      st.armed_now.fetch_sub(1, std::memory_order_relaxed);
      w.word.store(next_word(arming, kRestored), std::memory_order_release);
      continue;
    }
    uint64_t expected = arming;  // a fault may already have claimed it (then it is touched again)
    if (!w.word.compare_exchange_strong(expected, next_word(arming, kArmed), std::memory_order_acq_rel)) {
      settle_claimed_while_arming(w, start, end);
    }
    counters_of(t, w).rearmed.fetch_add(1, std::memory_order_relaxed);
    st.windows_rearmed.fetch_add(1, std::memory_order_relaxed);
    ++rearmed;
  }
  return rearmed;
}

}  // namespace sentinel
