// ProfileIndex: a read-only view of a StepProfile arranged for the planner and the cost model:
// each object's lifetime as (birth event, length in phases), its accesses as offsets into that
// lifetime, per-phase access lists, per-event birth/death lists and prefix sums of phase durations.
//
// Clock conventions (see profile.h): event k starts phase k. A non-persistent object is allocated at
// event birth and freed at the end of phase birth + life - 1 (taken modulo the period, so a lifetime
// may wrap into the next step); lifetimes longer than one period are clamped to one period (one live
// instance per tag). A persistent object is alive in every phase of every step and its placement
// carries from one step to the next ("cyclic").
//
// Thread safety: immutable after build(); concurrent readers are fine.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profile/profile.h"

namespace sentinel {

// Accesses as the memory sees them: `reads` are lines read from the object's memory, `writes` lines
// written to it. For a profile that counts write-backs (StepProfile::writebacks_counted: the emulated
// PMU, the software sampler) that is misses (loads and stores, which read their line first) and
// write-backs; for an older profile, its loads and its stores as recorded.
struct AccessView {
  uint32_t offset = 0;  // phases since birth (cyclic objects: the absolute phase)
  uint64_t reads = 0;
  uint64_t writes = 0;
};

struct ObjectView {
  uint64_t tag = 0;
  uint64_t size = 0;
  uint32_t birth = 0;     // birth event (0 for cyclic objects)
  uint32_t life = 1;      // phases alive, 1..period
  bool cyclic = false;    // persistent
  std::vector<AccessView> accesses;  // sorted by offset, offsets < life
  uint64_t total_accesses = 0;
};

struct PhaseAccessRef {
  uint32_t obj = 0;
  uint64_t reads = 0;
  uint64_t writes = 0;
};

class ProfileIndex {
 public:
  // Validates the parts of the profile the planner relies on (period, phases, unique tags, birth <
  // period, death >= birth). Accesses outside an object's lifetime are dropped and counted.
  bool build(const StepProfile& p, std::string* error);

  uint32_t period() const { return period_; }
  const std::vector<ObjectView>& objects() const { return objects_; }
  const ObjectView& object(uint32_t i) const { return objects_[i]; }
  uint64_t duration(uint32_t phase) const { return durations_[phase % period_]; }
  uint64_t step_ns() const { return prefix_[period_]; }
  uint64_t peak_bytes() const { return peak_bytes_; }
  uint32_t dropped_accesses() const { return dropped_accesses_; }
  // Time from event `from` to event `to` going forward (to > from allowed up to from + 2*period;
  // both may exceed the period, they are taken modulo it).
  uint64_t time_between(uint64_t from, uint64_t to) const;
  // Index of the object with this tag, or -1.
  int64_t find(uint64_t tag) const;
  // Offset of event `event` into the object's lifetime (cyclic: the event itself).
  uint32_t offset_of(const ObjectView& o, uint32_t event) const {
    return o.cyclic ? event : (event + period_ - o.birth) % period_;
  }
  bool alive_at(const ObjectView& o, uint32_t event) const {
    return o.cyclic || offset_of(o, event) < o.life;
  }
  const std::vector<PhaseAccessRef>& accesses_in(uint32_t phase) const { return by_phase_[phase]; }
  // Non-persistent objects born at / freed at event k (freed = lifetime ended in phase k-1).
  const std::vector<uint32_t>& births_at(uint32_t k) const { return births_[k]; }
  const std::vector<uint32_t>& deaths_at(uint32_t k) const { return deaths_[k]; }
  // Bytes of live objects in phase k (all tiers).
  uint64_t live_bytes(uint32_t k) const { return live_bytes_[k]; }

 private:
  uint32_t period_ = 0;
  std::vector<ObjectView> objects_;
  std::vector<uint64_t> durations_;
  std::vector<uint64_t> prefix_;  // 3*period+1 entries over an unrolled clock
  std::vector<std::vector<PhaseAccessRef>> by_phase_;
  std::vector<std::vector<uint32_t>> births_, deaths_;
  std::vector<uint64_t> live_bytes_;
  std::unordered_map<uint64_t, uint32_t> by_tag_;
  uint64_t peak_bytes_ = 0;
  uint32_t dropped_accesses_ = 0;
};

}  // namespace sentinel
