// The software access sampler: works without a PMU (VMs, perf_event_paranoid, containers).
//
// At each phase boundary the owner calls arm(regions, phase). For every live object region the sampler
// protects one contiguous window of `window_pages` whole pages inside the region with
// mprotect(PROT_NONE). The window's position rotates from one arm() to the next, so over many phases
// and steps every part of an object is sampled. The first access to a window raises SIGSEGV; the
// sampler's handler finds the window in a fixed-size lock-free table, counts one touch for
// (slot, phase), recording whether the access was a write (x86-64 page-fault error code), and lets
// the access re-execute: after a write it restores PROT_READ|PROT_WRITE; after a read (with
// watch_writes_after_reads) only PROT_READ, so that a later write to the window in the same cycle
// faults once more and is counted as dirtying it. An estimate of the pages an object touches in a
// phase is touched_fraction() * region pages: a touched window stands for region_pages / window_pages
// windows like it.
//
// Passes. Within a phase the owner may call rearm() now and then: every window touched since the last
// arm or rearm is protected again, at the same place, so the next pass of the program over the object
// touches it again. touched / armed then estimates the passes an object gets in the phase (as long as
// two passes over the window do not fall between the same two rearms), written / armed the passes
// that began with a write, dirtied / armed those that wrote it at all.
//
// One window per object keeps the number of extra VMAs bounded (each protected window splits a VMA in
// up to three; vm.max_map_count is 65530 by default): at most 2 * max_windows extra VMAs.
//
// Faults that are not the sampler's go to the program's SIGSEGV disposition (SegvChain): the one in
// place when start() ran, or a later one the preload routes through set_program_handler(). A fault
// the sampler cannot attribute to an armed window is first retried once (the window may just have
// been restored by another thread or by disarm()); a second fault at the same address in the same arm
// epoch is the program's.
//
// HAZARDS (the owner must handle them):
//  - A system call that touches a protected window does not fault: the kernel returns EFAULT
//    (read(2), recv(2), write(2) from the buffer, ...). The preload calls unprotect(buf, len) before
//    passing program buffers to such calls whenever armed_now() is not zero (preload/io_calls.h).
//  - The sampler assumes every region is an ordinary PROT_READ|PROT_WRITE mapping: it restores exactly
//    that. Regions must be unprotected (release(slot)) before they are freed or reused.
//  - Protecting 4 KiB inside a transparent huge page splits the huge page mapping.
//  - mprotect is not on the POSIX async-signal-safe list, but it is a plain system call on Linux.
//
// Thread safety and synchronisation.
//  - Owner operations (start, stop, arm, disarm, unprotect, counts, reset_counts, stats) are
//    serialized by an internal mutex and may be called from any thread except from inside a signal
//    handler. They may wait for other threads (a fault handler or release() restoring a window).
//  - release(slot) and release_ticket(slot) never take that mutex: they are meant for free(), which
//    must not block behind arm(). release() allocates nothing, takes no lock, looks only at the one
//    window of `slot` (a per-slot index, O(1)) and calls mprotect only on that window, holding nothing.
//    It waits in exactly one case: when arm() has published the slot's window and its
//    mprotect(PROT_NONE) is in flight (state arming), release() yields until that one call returns
//    (or a fault claims the window), because a restore issued before it would be undone. It never
//    waits for the rest of arm().
//  - The SIGSEGV handler takes no locks and allocates nothing.
//  - Each window entry is a small state machine in one atomic word (state plus a generation that
//    changes at every transition, so a compare-exchange cannot succeed on a recycled entry):
//      free -> arming (owner publishes, then mprotect(PROT_NONE)) -> armed
//      armed -> restoring (whoever wins the compare-exchange: a fault, release(), or the owner)
//      arming -> restoring (a fault only: it proves the protection is in effect)
//            -> restored (pages readable and writable again; the entry keeps its slot)
//            -> read-only (after a read fault: PROT_READ; still counted in armed_now)
//      read-only -> restoring (a write fault, release(), or the owner) -> restored
//      restored -> arming (owner, rearm(): protected again if the slot's release ticket is unchanged)
//      restored -> free (owner, at the next arm/disarm, or add() for a released slot)
//      free -> reserved (arm_birth(), any thread, birth entries only) -> arming -> armed: then as above
//    The entry's fields (range, slot, phase) are written only while it is free; readers re-check the
//    word after reading them. release() finding a window restoring by someone else restores the range
//    itself (mprotect to PROT_READ|PROT_WRITE is idempotent) instead of waiting; the owner waits for
//    the restorer to finish before it frees the entry; the handler waits, then retries the access.
//  - A region may have been freed between the moment the owner saw it alive and arm(). To close that
//    gap, read release_ticket(slot) BEFORE checking that the object is alive and pass it in
//    SampleRegion::release_ticket: release() increments the slot's count before it looks for the
//    window, and arm() re-reads the count after publishing the window, so one of the two always sees
//    the other (both sequentially consistent) and a freed region is never left protected.
//  - After release(slot) returns, no page of any window of `slot` is protected, provided every region
//    armed for `slot` carried a ticket read before the object's liveness check (or was armed before
//    release() began).
//
// REQUIRES: a slot names one piece of memory: the regions passed for a slot never overlap another
// slot's memory. At most one window per slot is armed per arm() (duplicates are skipped and counted).
// Tables are allocated by the first start() and kept until the sampler is destroyed (a later start()
// with the same sizes reuses them), so release() racing with stop() or a restart never touches freed
// memory. Only one SoftwareSampler can be started in a process at a time (it owns SIGSEGV).
#pragma once

#include <atomic>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sentinel {

inline constexpr uint64_t kNoReleaseTicket = ~uint64_t{0};

struct SampleRegion {
  uintptr_t addr = 0;  // object start (need not be page aligned; only whole pages inside are sampled)
  size_t len = 0;
  uint32_t slot = 0;   // the owner's object id; < max_slots
  // release_ticket(slot) read before the owner checked that the object is alive; kNoReleaseTicket
  // skips the check (then a region freed before arm() may stay protected until the next arm/disarm).
  uint64_t release_ticket = kNoReleaseTicket;
};

// One touch of a window (the first access of a cycle), stamped with the program's clock at the fault, so
// that the owner can put it in the phase it happened in however late it looks (take_touches()).
struct WindowTouch {
  uint32_t slot = 0;
  uintptr_t addr = 0;    // the window's first byte (inside the slot's region)
  uint64_t clock = 0;    // *SoftwareSamplerOptions::clock when the touch happened (0 without a clock)
  bool write = false;    // the cycle began with a write
  bool dirtied = false;  // the window was written in the cycle (first access or later)
};

struct SoftwareSamplerOptions {
  uint32_t max_slots = 4096;    // object ids 0..max_slots-1
  uint32_t max_phases = 1024;   // phases 0..max_phases-1
  uint32_t max_windows = 4096;  // windows armed at once; regions beyond are skipped and counted
  uint32_t window_pages = 1;    // pages per window (fewer if the region is smaller)
  bool watch_writes_after_reads = true;  // a read leaves the window read-only (see above)
  // Entries for arm_birth() (any thread), beyond the owner's max_windows; 0: no arm_birth().
  uint32_t birth_windows = 0;
  // A word the program advances (the runtime's step clock, one tick per object allocation), read with
  // an atomic load at every touch; nullptr stamps 0.
  const uint64_t* clock = nullptr;
};

// Counts for one (slot, phase), accumulated over every arm() since the last reset_counts().
struct WindowCounts {
  uint64_t armed = 0;         // windows armed by arm()
  uint64_t touched = 0;       // touches: first accesses in a cycle (an arm or a rearm)
  uint64_t written = 0;       // of the touches, those that were writes
  uint64_t dirtied = 0;       // cycles in which the window was written (first access or later)
  uint64_t armed_pages = 0;   // pages in the windows armed by arm()
  uint64_t rearmed = 0;       // windows protected again by rearm()
  double touched_fraction() const { return armed == 0 ? 0.0 : static_cast<double>(touched) / armed; }
};

struct SoftwareSamplerStats {
  uint64_t arms = 0;              // arm() calls
  uint64_t windows_armed = 0;     // windows protected, in total
  uint64_t armed_now = 0;         // windows currently protected
  uint64_t skipped_small = 0;     // regions without a whole page inside
  uint64_t skipped_range = 0;     // slot or phase out of range
  uint64_t skipped_capacity = 0;  // table full (max_windows)
  uint64_t mprotect_failures = 0; // mprotect refused, protecting or restoring (e.g. ENOMEM: VMA limit)
  uint64_t faults_claimed = 0;    // faults that were the sampler's
  uint64_t faults_retried = 0;    // unattributed faults retried once
  uint64_t faults_repaired = 0;   // pages found protected in a window already restored: made accessible
  uint64_t faults_chained = 0;    // faults handed to the program's disposition
  uint64_t skipped_released = 0;  // regions released after their ticket was read: not armed
  uint64_t skipped_io = 0;        // windows not armed (or rearmed) because a program's I/O call used them
  uint64_t io_unguarded = 0;      // I/O calls made while every guard entry was taken (begin_io returned 0)
  uint64_t skipped_duplicate = 0; // a second region for a slot in one arm()
  uint64_t releases_restored = 0; // windows restored by release() (not counted as touches)
  uint64_t rearms = 0;            // rearm() calls
  uint64_t windows_rearmed = 0;   // windows protected again by them
  uint64_t births_armed = 0;      // windows armed by arm_birth()
  uint64_t births_skipped = 0;    // arm_birth() calls that found every birth entry in use
};

class SoftwareSampler {
 public:
  SoftwareSampler();
  ~SoftwareSampler();  // stop(), then gives SIGSEGV back to the program's current disposition
  SoftwareSampler(const SoftwareSampler&) = delete;
  SoftwareSampler& operator=(const SoftwareSampler&) = delete;

  // Allocates the tables and installs the SIGSEGV handler (SA_SIGINFO|SA_ONSTACK), remembering the
  // previous disposition as the program's (a restart of a stopped sampler keeps both). Fails if another
  // sampler holds SIGSEGV or options are zero.
  bool start(const SoftwareSamplerOptions& options, std::string* error);
  // Restores every window. The handler stays in the kernel slot until destruction: a fault on a window
  // whose signal arrives after the stop is retried, not handed to the program (see stop()).
  void stop();
  bool started() const;

  // Restores the windows of the previous arm() (their touches stay counted for their phase) and
  // protects one window in each region for `phase`. Returns the number of windows armed.
  size_t arm(const std::vector<SampleRegion>& regions, uint32_t phase);
  // Protects again, in place, every window touched since the last arm() or rearm() (a new cycle of
  // the same phase; see "Passes" above). Windows whose slot was released meanwhile stay unprotected.
  // Returns the windows protected again.
  size_t rearm();
  // Arms a window in each region whose slot has none now (its last pages: a new object's first pass, if
  // it has begun, has most likely not reached them yet), and keeps every other window as it is: an
  // armed one stays armed, a touched one waits for the next rearm(). Entries of released slots are
  // freed first. One mprotect per new region, against two per region for arm(): the owner can follow
  // every allocation with it. Returns the windows armed.
  size_t add(const std::vector<SampleRegion>& regions, uint32_t phase);
  // Arms a window in the region of an object that is about to be handed to the program, so that its first
  // pass is seen however late the owner would arm it (the allocator calls it). Any thread, lock-free,
  // allocation-free, async-signal-safe; one mprotect. From then on the window is the owner's like any
  // other (rearm, take_touches, disarm). False when the sampler is stopped, the region has no whole page,
  // or every birth entry is in use (births_skipped).
  bool arm_birth(const SampleRegion& r);
  // Appends the touches of the cycles that rearm(), arm(), add() or disarm() closed since the last call
  // (a window touched and not yet rearmed gives its touch at the next of these), each once.
  void take_touches(std::vector<WindowTouch>* out);
  // Restores every window without arming new ones (profiling stopped, or between steps).
  void disarm();
  // Restores the window of `slot`; call before the object's memory is freed or reused. Not counted as
  // a touch. Lock-free and O(1); safe from free() while another thread runs arm() (see above).
  void release(uint32_t slot);
  // The number of release(slot) calls so far, for SampleRegion::release_ticket. Lock-free; returns
  // kNoReleaseTicket before the first start().
  uint64_t release_ticket(uint32_t slot) const;
  // Restores every window overlapping [addr, addr+len) (e.g. before read(2) into a program buffer).
  // With count_as_touch, those windows are counted as touched (written) in their phase, since the
  // caller is about to access them.
  void unprotect(uintptr_t addr, size_t len, bool count_as_touch);
  // A program's I/O call over [addr, addr+len) (read, recv, write, ...: the kernel returns EFAULT, or a
  // short count, instead of faulting on a protected page): begin_io restores every window there (counted
  // as touches) and keeps the owner from arming any window there until end_io(token). It may run in a
  // signal handler that interrupted a thread holding the sampler's lock (Python writes its wakeup byte
  // from one): lock-free, the fault's claim protocol per window, and it waits only, boundedly, for a
  // window whose one mprotect call another thread is making. Returns the token for end_io (valid across
  // a restart of the sampler); 0 when every guard entry is taken (then the windows are restored but the
  // owner may arm them again before the call: counted in io_unguarded). Allocates nothing.
  uintptr_t begin_io(uintptr_t addr, size_t len);
  static void end_io(uintptr_t token);
  // Windows protected (or being protected) right now. Lock-free, any thread, never blocks. A window is
  // counted before its mprotect(PROT_NONE) and uncounted after its pages are accessible again, so 0
  // means no page is protected at this instant (a concurrent arm() may protect one right after).
  uint64_t armed_now() const noexcept;

  WindowCounts counts(uint32_t slot, uint32_t phase) const;
  void reset_counts();
  SoftwareSamplerStats stats() const;

  // The program's view of SIGSEGV while the sampler is started (see segv_chain.h). Works whether or
  // not a sampler is started; when none is, the preload should pass the call to the kernel instead.
  static void set_program_handler(const struct sigaction& act, struct sigaction* old);
  // The program's sigaction(SIGSEGV) as the preload interposes it: kept for the program while a sampler
  // holds the kernel slot, else passed to `kernel`; atomic with start() and stop() taking and giving
  // back the slot (segv_chain.h).
  static int program_sigaction(const struct sigaction* act, struct sigaction* old,
                               int (*kernel)(int, const struct sigaction*, struct sigaction*));

  struct Window;  // table entry, defined in software_sampler_internal.h
  struct Tables;  // windows, per-slot index and release counts, counters, stats (same header)

 private:
  void restore_overlapping(uintptr_t addr, size_t len, bool count_as_touch);  // caller holds mu_
  static void on_signal(int sig, siginfo_t* info, void* ucontext);
  // One line on stderr (write(2), async-signal-safe) about a fault that is about to kill the program.
  static void note_fatal_fault(const Tables* t, const siginfo_t* info, const void* ucontext);
  bool claim(Tables& t, uintptr_t addr, void* ucontext);
  bool repair_to_state(Tables& t, Window& w, uint64_t word, uintptr_t start, uintptr_t end);
  bool repair_lost_restore(Tables& t, uintptr_t addr);
  void restore_window(Tables& t, Window& w, bool count_as_touch);
  void disarm_locked(Tables& t);
  // Publishes entry `index` (free) for the region and protects its window; false (entry free again) when
  // the region is skipped. `rotation` places the window.
  bool arm_entry(Tables& t, uint32_t index, const SampleRegion& r, uint32_t phase, uint64_t rotation);
  static constexpr uint64_t kLastWindow = ~uint64_t{0};  // arm_entry's rotation for the region's last window
  void hand_back_segv();  // destructor only
  // Owner, after its mprotect(PROT_NONE) of an arming window lost the window to a fault's claim.
  void settle_claimed_while_arming(Window& w, uintptr_t start, uintptr_t end);

  mutable std::mutex mu_;  // owner operations only; never taken by release() or the handler
  size_t page_ = 4096;
  std::atomic<Tables*> tables_{nullptr};       // published by start(), never freed before ~SoftwareSampler
  std::vector<std::unique_ptr<Tables>> owned_;  // every Tables ever allocated (owner-only)
  std::atomic<bool> started_{false};
  uint64_t rotation_ = 0;  // owner-only: advances the window position each arm()
};

}  // namespace sentinel
