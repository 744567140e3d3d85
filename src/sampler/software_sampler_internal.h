// Internal to the software sampler (software_sampler.cc: starting, arming, statistics;
// software_sampler_window.cc: the window protocol that runs in the signal handler and inside free()).
// The tables and the state word of a window; the protocol itself is stated in software_sampler.h.
//
// Thread safety: as software_sampler.h says for each field; the helpers are lock-free and
// async-signal-safe.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "os/os.h"
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
      skipped_capacity{0}, mprotect_failures{0}, faults_claimed{0}, faults_retried{0}, faults_chained{0},
      skipped_released{0}, skipped_duplicate{0}, releases_restored{0}, rearms{0}, windows_rearmed{0},
      skipped_io{0}, io_unguarded{0};
  std::atomic<uint32_t> high_water{0};  // entries [0, high_water) may be in use
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
};

namespace software_sampler_internal {

// kReadOnly: a read touched the armed window, which stays protected against writes (PROT_READ) so that
// a write later in the same cycle is seen too; it counts as armed (armed_now) until restored.
constexpr uint64_t kFree = 0, kArming = 1, kArmed = 2, kRestoring = 3, kRestored = 4, kReadOnly = 5;
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

// The first access of a cycle (an arm or a rearm) to an armed window.
inline void count_touch(SoftwareSampler::Tables& t, const SoftwareSampler::Window& w, bool write) {
  Counters& c = counters_of(t, w);
  c.touched.fetch_add(1, std::memory_order_relaxed);
  if (write) {
    c.written.fetch_add(1, std::memory_order_relaxed);
    c.dirtied.fetch_add(1, std::memory_order_relaxed);
  }
}

// A write to a window a read had already touched in this cycle.
inline void count_dirtied(SoftwareSampler::Tables& t, const SoftwareSampler::Window& w) {
  counters_of(t, w).dirtied.fetch_add(1, std::memory_order_relaxed);
}

// Makes an owner-held entry (restored or free) free and forgets it in its slot's index.
inline void free_entry(SoftwareSampler::Tables& t, SoftwareSampler::Window& w, uint32_t index) {
  const uint64_t word = w.word.load(std::memory_order_relaxed);
  if (state_of(word) != kFree) {
    uint32_t expected = index + 1;
    t.slots[w.slot.load(std::memory_order_relaxed)].window.compare_exchange_strong(expected, 0);
    w.word.store(next_word(word, kFree), std::memory_order_release);
  }
}

}  // namespace software_sampler_internal
}  // namespace sentinel
