#include "test_profiles.h"

#include <algorithm>

namespace sentinel::test {

ObjectProfile object(uint64_t tag, uint64_t size, uint32_t birth, uint32_t death,
                     const std::vector<uint32_t>& use_phases, uint64_t accesses) {
  ObjectProfile o;
  o.tag = tag;
  o.size = size;
  o.birth_phase = birth;
  o.death_phase = death;
  for (uint32_t p : use_phases) o.accesses.push_back({p, accesses, 0});
  return o;
}

ObjectProfile persistent(uint64_t tag, uint64_t size, uint32_t period,
                         const std::vector<uint32_t>& use_phases, uint64_t accesses) {
  ObjectProfile o = object(tag, size, 0, period - 1, use_phases, accesses);
  o.persistent = true;
  return o;
}

StepProfile make_profile(uint32_t period, uint64_t phase_ns, std::vector<ObjectProfile> objects) {
  StepProfile p;
  p.period = period;
  p.phases.assign(period, PhaseProfile{phase_ns});
  p.step_time_ns = phase_ns * period;
  p.profiled_steps = 1;
  p.sampler = "none";
  p.objects = std::move(objects);
  for (uint32_t k = 0; k < period; ++k) {
    uint64_t live = 0;
    for (const auto& o : p.objects) {
      uint32_t off = (k + period - o.birth_phase) % period;
      if (o.persistent || off <= o.death_phase - o.birth_phase) live += o.size;
    }
    p.peak_object_bytes = std::max(p.peak_object_bytes, live);
  }
  return p;
}

}  // namespace sentinel::test
