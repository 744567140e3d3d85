#include "profile/sample_attribution.h"

#include <algorithm>

namespace sentinel {

void SampleAttributor::clear() {
  phases_.clear();
  at_start_.clear();
}

void SampleAttributor::on_phase(uint64_t clock, uint64_t time_ns, uint32_t step, uint32_t phase) {
  // Event times are read after the step clock advanced, outside its lock: two threads may stamp
  // them out of order by a little. Searching needs them sorted.
  if (!phases_.empty()) time_ns = std::max(time_ns, phases_.back().time_ns);
  phases_.push_back(PhaseStart{clock, time_ns, step, phase});
}

void SampleAttributor::on_object(uint64_t key, uint64_t start, uint64_t size, uint64_t clock, uint64_t time_ns) {
  std::vector<Instance>& v = at_start_[start];
  if (!v.empty()) time_ns = std::max(time_ns, v.back().time_ns);
  v.push_back(Instance{clock, time_ns, key, size});
}

bool SampleAttributor::find(uint64_t addr, bool use_time, uint64_t when, Hit* out) const {
  auto later = [use_time](uint64_t w, const auto& x) { return w < (use_time ? x.time_ns : x.clock); };
  auto ph = std::upper_bound(phases_.begin(), phases_.end(), when, later);
  if (ph == phases_.begin()) return false;
  --ph;
  auto at = at_start_.upper_bound(addr);
  if (at == at_start_.begin()) return false;
  --at;
  const std::vector<Instance>& v = at->second;
  auto inst = std::upper_bound(v.begin(), v.end(), when, later);
  if (inst == v.begin()) return false;
  --inst;
  if (addr - at->first >= inst->size) return false;
  out->key = inst->key;
  out->step = ph->step;
  out->phase = ph->phase;
  out->size = inst->size;
  return true;
}

bool SampleAttributor::by_clock(uint64_t addr, uint64_t clock, Hit* out) const { return find(addr, false, clock, out); }

bool SampleAttributor::by_time(uint64_t addr, uint64_t time_ns, Hit* out) const { return find(addr, true, time_ns, out); }

}  // namespace sentinel
