// Internal to the software sampler (software_sampler.cc: starting, stopping, the handler, statistics;
// software_sampler_arm.cc: arming; software_sampler_window.cc: the window protocol that runs in the
// signal handler and inside free()).
// The tables and the state word of a window; the protocol itself is stated in software_sampler.h.
//
// Thread safety: as software_sampler.h says for each field; the helpers are lock-free and
// async-signal-safe.
#pragma once

#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "os/os.h"
#include "os/spin_lock.h"
#include "sampler/software_sampler.h"

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
  // The cycle's touch (WindowTouch): written by whoever claimed the window, before the state store that
  // ends the claim; read and cleared by the owner when it closes the cycle (collect_touch).
  std::atomic<uint64_t> touch_clock{0};
  std::atomic<uint32_t> touch_flags{0};
};

namespace software_sampler_internal {

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
      skipped_capacity{0}, mprotect_failures{0}, faults_claimed{0}, faults_retried{0}, faults_repaired{0}, faults_chained{0},
      skipped_released{0}, skipped_duplicate{0}, releases_restored{0}, rearms{0}, windows_rearmed{0},
      skipped_io{0}, io_unguarded{0};
  std::atomic<uint32_t> high_water{0};  // owner entries [0, high_water) may be in use
  // arm_birth() entries [max_windows, max_windows + birth_high_water) may be in use; it only grows, since
  // an allocating thread may arm one whenever the sampler is started.
  std::atomic<uint32_t> birth_high_water{0};
  std::atomic<uint32_t> birth_cursor{0};  // arm_birth() calls so far: spreads its windows over objects
  std::atomic<uint64_t> births_armed{0}, births_skipped{0};
  std::atomic<uint64_t> epoch{1};       // advances at every arm/disarm
};

// A program's I/O call in flight over [lo, hi) (begin_io .. end_io): the owner arms no window that
// overlaps it. `busy` claims the entry (0 -> 1, CAS); lo/hi are written while it is claimed and not yet
// active; `active` (seq_cst) publishes them. The owner stores a window's kArming (seq_cst) before it
// reads `active`, and begin_io stores `active` before it reads the windows' words: one of the two sees
// the other (the owner skips the window, or begin_io waits for the arming and restores the window).
struct IoGuard {
  std::atomic<uint32_t> busy{0};
  std::atomic<uint32_t> active{0};
  std::atomic<uintptr_t> lo{0}, hi{0};
};
constexpr uint32_t kIoGuards = 256;

}  // namespace software_sampler_internal

struct SoftwareSampler::Tables {
  SoftwareSamplerOptions opt;
  std::atomic<const uint64_t*> clock{nullptr};  // opt.clock, for the handler (a restart may change it)
  std::vector<WindowTouch> touches;             // closed cycles' touches (owner-only, under mu_)
  std::unique_ptr<Window[]> windows;     // max_windows
  std::unique_ptr<software_sampler_internal::SlotState[]> slots;    // max_slots
  std::unique_ptr<software_sampler_internal::Counters[]> counters;  // max_slots * max_phases
  software_sampler_internal::Stats stats;
  software_sampler_internal::IoGuard io[software_sampler_internal::kIoGuards];

  // Whether a program's I/O call in flight overlaps [start, end). seq_cst: see IoGuard.
  bool io_overlaps(uintptr_t start, uintptr_t end) const {
    for (const software_sampler_internal::IoGuard& g : io) {
      if (g.active.load(std::memory_order_seq_cst) == 0) continue;
      if (g.lo.load(std::memory_order_relaxed) < end && start < g.hi.load(std::memory_order_relaxed)) return true;
    }
    return false;
  }

  software_sampler_internal::Counters& counter(uint32_t slot, uint32_t phase) {
    return counters[uint64_t{slot} * opt.max_phases + phase];
  }

  // The entries that may be in use: the owner's and arm_birth()'s (every loop over windows takes both).
  struct EntryRange {
    uint32_t begin, end;
  };
  std::array<EntryRange, 2> in_use() const {
    return {{{0, stats.high_water.load(std::memory_order_acquire)},
             {opt.max_windows, opt.max_windows + stats.birth_high_water.load(std::memory_order_acquire)}}};
  }
  uint32_t entries() const { return opt.max_windows + opt.birth_windows; }
};

namespace software_sampler_internal {

// kReadOnly: a read touched the armed window, which stays protected against writes (PROT_READ) so that
// a write later in the same cycle is seen too; it counts as armed (armed_now) until restored.
// kReserved: an allocating thread took a free birth entry (arm_birth) and is writing its fields; nobody
// else reads them until it publishes kArming.
constexpr uint64_t kFree = 0, kArming = 1, kArmed = 2, kRestoring = 3, kRestored = 4, kReadOnly = 5, kReserved = 6;
inline uint64_t state_of(uint64_t word) { return word & 7; }
inline uint64_t next_word(uint64_t word, uint64_t state) { return ((word >> 3) + 1) << 3 | state; }

inline int make_accessible(uintptr_t start, uintptr_t end) {
  return os::mprotect(reinterpret_cast<void*>(start), end - start, PROT_READ | PROT_WRITE);
}

inline int make_read_only(uintptr_t start, uintptr_t end) {
  return os::mprotect(reinterpret_cast<void*>(start), end - start, PROT_READ);
}

inline Counters& counters_of(SoftwareSampler::Tables& t, const SoftwareSampler::Window& w) {
  return t.counter(w.slot.load(std::memory_order_relaxed), w.phase.load(std::memory_order_relaxed));
}

constexpr uint32_t kTouchedFlag = 1, kWriteFlag = 2, kDirtyFlag = 4;

// The first access of a cycle (an arm or a rearm) to an armed window.
inline void count_touch(SoftwareSampler::Tables& t, SoftwareSampler::Window& w, bool write) {
  const uint64_t* clock = t.clock.load(std::memory_order_relaxed);
  w.touch_clock.store(clock == nullptr ? 0 : __atomic_load_n(clock, __ATOMIC_RELAXED), std::memory_order_relaxed);
  w.touch_flags.store(kTouchedFlag | (write ? kWriteFlag | kDirtyFlag : 0), std::memory_order_relaxed);
  Counters& c = counters_of(t, w);
  c.touched.fetch_add(1, std::memory_order_relaxed);
  if (write) {
    c.written.fetch_add(1, std::memory_order_relaxed);
    c.dirtied.fetch_add(1, std::memory_order_relaxed);
  }
}

// A write to a window a read had already touched in this cycle.
inline void count_dirtied(SoftwareSampler::Tables& t, SoftwareSampler::Window& w) {
  w.touch_flags.fetch_or(kDirtyFlag, std::memory_order_relaxed);
  counters_of(t, w).dirtied.fetch_add(1, std::memory_order_relaxed);
}

// Owner only, with the window restored, read-only or free (no claim in flight): moves the cycle's touch, if
// any, to the touches take_touches() hands out.
inline void collect_touch(SoftwareSampler::Tables& t, SoftwareSampler::Window& w) {
  const uint32_t flags = w.touch_flags.exchange(0, std::memory_order_acquire);
  if ((flags & kTouchedFlag) == 0) return;
  t.touches.push_back(WindowTouch{w.slot.load(std::memory_order_relaxed), w.start.load(std::memory_order_relaxed),
                                  w.touch_clock.load(std::memory_order_relaxed), (flags & kWriteFlag) != 0,
                                  (flags & kDirtyFlag) != 0});
}

// Makes an owner-held restored entry free and forgets it in its slot's index; leaves any other alone (a free
// birth entry may be reserved by an allocating thread at any moment: arm_birth).
inline void free_entry(SoftwareSampler::Tables& t, SoftwareSampler::Window& w, uint32_t index) {
  for (;;) {
    uint64_t word = w.word.load(std::memory_order_acquire);
    const uint64_t s = state_of(word);
    // A fault handler is repairing the restored window's pages (claim, repair_to_state) and puts the state
    // back after its one mprotect: wait for it. Returning left the slot's index set and the entry out of the
    // table once disarm reset the high-water mark: the slot was never armed again (1,196 of 32,000 arms
    // lost in SoftwareSampler.RearmingWhileThreadsTouch under ASan).
    if (s == kRestoring) {
      os::yield_cpu();
      continue;
    }
    if (s != kRestored) return;
    uint32_t expected = index + 1;
    t.slots[w.slot.load(std::memory_order_relaxed)].window.compare_exchange_strong(expected, 0);
    if (w.word.compare_exchange_strong(word, next_word(word, kFree), std::memory_order_acq_rel)) return;
  }
}

}  // namespace software_sampler_internal
}  // namespace sentinel
