#include "profile/profile_builder.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "core/hash.h"

namespace sentinel {

ProfileBuilder::ProfileBuilder(uint32_t period, uint32_t profiled_steps)
    : period_(period), steps_(profiled_steps), phase_ns_(period, 0), step_phase_ns_(period, 0) {}

ObjectProfile ProfileBuilder::new_object(uint64_t tag, uint64_t site, uint32_t occurrence, uint64_t size,
                                         uint32_t birth_phase) const {
  ObjectProfile o;
  o.tag = tag;
  o.site = site;
  o.occurrence = occurrence;
  o.size = size;
  o.birth_phase = birth_phase;
  o.death_phase = period_ - 1;
  return o;
}

ProfileBuilder::Accum& ProfileBuilder::accum_for(uint64_t tag) {
  auto [it, inserted] = by_tag_.try_emplace(tag);
  if (inserted) tag_order_.push_back(tag);
  return it->second;
}

void ProfileBuilder::add_persistent(uint64_t key, uint64_t tag, uint64_t site, uint32_t occurrence,
                                    uint64_t size) {
  Accum& a = accum_for(tag);
  if (a.instances == 0) {
    a.object = new_object(tag, site, occurrence, size, 0);
    a.object.persistent = true;
    a.instances = steps_;
  }
  live_[key] = Instance{tag, true, 0};
}

void ProfileBuilder::on_alloc(uint64_t key, uint64_t tag, uint64_t site, uint32_t occurrence, uint64_t size,
                              uint32_t step, uint32_t event, uint64_t time_ns, uint64_t live_bytes_after) {
  if (step >= steps_ || event >= period_) {
    if (step >= steps_ && end_ns_ == 0) on_profile_end(time_ns);
    return;
  }
  // The time since the previous event is the duration of the previous phase.
  if (any_event_ && time_ns >= last_event_ns_ && last_step_ < steps_) {
    phase_ns_[last_event_] += time_ns - last_event_ns_;
    if (last_step_ == step) step_phase_ns_[last_event_] += time_ns - last_event_ns_;
  }
  if (any_event_ && step != last_step_) std::fill(step_phase_ns_.begin(), step_phase_ns_.end(), 0);
  if (event == 0 && step_start_ns_.size() == step) step_start_ns_.push_back(time_ns);
  any_event_ = true;
  last_event_ns_ = time_ns;
  last_step_ = step;
  last_event_ = event;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_after);

  // A step-local object whose call-site and occurrence equal those of a persistent object (the
  // gradient buffer kept from the first step, say, and a temporary allocated at the same point of
  // later steps) gets a derived tag, so tags stay unique in the profile.
  uint64_t base_tag = 0;
  auto existing = by_tag_.find(tag);
  if (existing != by_tag_.end() && existing->second.object.persistent) {
    existing->second.has_derived = true;
    base_tag = tag;
    tag = derived_tag(tag);
  }
  Accum& a = accum_for(tag);
  if (base_tag != 0) a.base_tag = base_tag;
  if (a.instances == 0 || (!a.object.persistent && a.object.size == 0)) {
    a.object = new_object(tag, site, occurrence, size, event);  // alive to the step end until freed
  }
  if (!a.object.persistent) {
    ++a.instances;
    a.object.size = std::max(a.object.size, size);
  }
  live_[key] = Instance{tag, a.object.persistent, step};
}

void ProfileBuilder::on_free(uint64_t key, uint32_t step, uint32_t event, uint64_t) {
  auto it = live_.find(key);
  if (it == live_.end()) return;
  Instance inst = it->second;
  live_.erase(it);
  if (inst.persistent) {
    by_tag_[inst.tag].freed_while_profiling = true;
  } else if (step >= inst.birth_step) {
    Accum& a = by_tag_[inst.tag];
    if (!a.died && !a.object.persistent) {  // the first profiled instance defines the lifetime
      const uint64_t span = uint64_t{step - inst.birth_step} * period_ + event;
      // Alive at most until the same point of the next step; longer lives are clipped (and counted as
      // spanning the whole step from birth).
      const uint64_t max_death = uint64_t{a.object.birth_phase} + period_ - 1;
      a.object.death_phase = static_cast<uint32_t>(std::clamp<uint64_t>(span, a.object.birth_phase, max_death));
      a.died = true;
      inst.defined_death = true;
    }
  }
  if (step < steps_) dead_[key] = inst;
}

void ProfileBuilder::begin_step_over(uint32_t step, uint64_t time_ns) {
  if (step >= steps_ || !any_event_ || last_step_ > step) return;
  if (last_step_ < step) {
    // None of the step's events came yet: the phase before it ends now, and nothing is dropped.
    if (last_step_ < steps_ && time_ns >= last_event_ns_) phase_ns_[last_event_] += time_ns - last_event_ns_;
    any_event_ = false;
    return;
  }
  const auto drop = [this, step](const Instance& inst) {
    if (inst.persistent || inst.birth_step != step) return false;
    Accum& a = by_tag_[inst.tag];
    if (a.instances > 0) --a.instances;
    if (a.instances == 0) {
      // As if never born: on_alloc() makes its object anew at its next birth, and build() leaves it out
      // until then.
      Accum unborn;
      unborn.object = a.object;
      unborn.object.size = 0;
      a = std::move(unborn);
    } else if (inst.defined_death) {
      a.died = false;  // the next instance to die defines the lifetime
      a.object.death_phase = period_ - 1;
    }
    return true;
  };
  for (auto it = live_.begin(); it != live_.end();) it = drop(it->second) ? live_.erase(it) : std::next(it);
  for (auto it = dead_.begin(); it != dead_.end();) it = drop(it->second) ? dead_.erase(it) : std::next(it);
  for (uint32_t i = 0; i < period_; ++i) phase_ns_[i] -= step_phase_ns_[i];
  std::fill(step_phase_ns_.begin(), step_phase_ns_.end(), 0);
  // The step starts again at its next event 0, and the time until then is no phase's.
  if (step < step_start_ns_.size()) step_start_ns_.resize(step);
  any_event_ = false;
}

void ProfileBuilder::on_access(uint64_t key, uint32_t step, uint32_t phase, uint64_t reads, uint64_t writes,
                               uint64_t writebacks) {
  if (step >= steps_ || phase >= period_) return;
  uint64_t tag;
  if (auto it = live_.find(key); it != live_.end()) {
    tag = it->second.tag;
  } else if (auto d = dead_.find(key); d != dead_.end()) {
    tag = d->second.tag;
  } else {
    return;
  }
  Accum& a = by_tag_[tag];
  PhaseAccess& pa = a.by_phase[phase];
  pa.phase = phase;
  pa.reads += reads;
  pa.writes += writes;
  pa.writebacks += writebacks;
}

void ProfileBuilder::on_profile_end(uint64_t time_ns) {
  if (end_ns_ != 0) return;
  if (any_event_ && time_ns >= last_event_ns_) phase_ns_[last_event_] += time_ns - last_event_ns_;
  end_ns_ = time_ns;
}

StepProfile ProfileBuilder::build(const std::string& sampler, uint64_t sample_period,
                                  const std::string& program) const {
  StepProfile p;
  p.period = period_;
  const uint32_t steps_seen = static_cast<uint32_t>(std::max<size_t>(step_start_ns_.size(), 1));
  p.profiled_steps = steps_seen;
  p.sampler = sampler;
  p.sample_period = sample_period;
  p.program = program;
  p.peak_object_bytes = peak_bytes_;
  p.phases.resize(period_);
  const bool unsampled = unsampled_phase_ns_.size() == period_ &&
                         std::all_of(unsampled_phase_ns_.begin(), unsampled_phase_ns_.end(), [](uint64_t v) { return v > 0; });
  uint64_t total = 0;
  for (uint32_t i = 0; i < period_; ++i) {
    p.phases[i].duration_ns = unsampled ? unsampled_phase_ns_[i] : phase_ns_[i] / steps_seen;
    total += p.phases[i].duration_ns;
  }
  // The sum of the phases, not the time from the first step's start to the end: a step left out or begun
  // over (begin_step_over) took time that is no phase's.
  p.step_time_ns = total;

  for (uint64_t tag : tag_order_) {
    const Accum& a = by_tag_.at(tag);
    if (a.object.size == 0 || a.phantom()) continue;
    ObjectProfile o = a.object;
    // The phantom's accesses are this object's, one step earlier: they count with its own.
    std::unordered_map<uint32_t, PhaseAccess> by_phase = a.by_phase;
    if (a.base_tag != 0 && by_tag_.at(a.base_tag).phantom()) {
      o.tag = a.base_tag;
      for (const auto& [phase, pa] : by_tag_.at(a.base_tag).by_phase) {
        PhaseAccess& merged = by_phase[phase];
        merged.phase = phase;
        merged.reads += pa.reads;
        merged.writes += pa.writes;
        merged.writebacks += pa.writebacks;
      }
    }
    const uint64_t divisor = std::max<uint32_t>(a.object.persistent ? steps_seen : a.instances, 1);
    auto alive = [&](uint32_t phase) {
      return o.death_phase < period_ ? (phase >= o.birth_phase && phase <= o.death_phase)
                                     : (phase >= o.birth_phase || phase <= o.death_phase - period_);
    };
    // A dirty line of a dead object still goes back to memory, later: its write-back counts in the
    // object's last phase, so that the object's write-backs add up.
    const uint32_t last_phase = o.death_phase < period_ ? o.death_phase : o.death_phase - period_;
    uint64_t late_writebacks = 0;
    for (const auto& [phase, pa] : by_phase) {
      if (!alive(phase)) late_writebacks += pa.writebacks;
    }
    if (late_writebacks / divisor > 0) by_phase[last_phase].phase = last_phase;
    for (const auto& [phase, pa] : by_phase) {
      // Only phases inside the lifetime: a sample that lands just after a free belongs to no object.
      if (!alive(phase)) continue;
      const uint64_t writebacks = pa.writebacks + (phase == last_phase ? late_writebacks : 0);
      o.accesses.push_back(PhaseAccess{phase, pa.reads / divisor, pa.writes / divisor, writebacks / divisor});
    }
    std::sort(o.accesses.begin(), o.accesses.end(),
              [](const PhaseAccess& x, const PhaseAccess& y) { return x.phase < y.phase; });
    p.objects.push_back(std::move(o));
  }
  return p;
}

}  // namespace sentinel
