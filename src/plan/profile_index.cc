#include "plan/profile_index.h"

#include <algorithm>

namespace sentinel {

bool ProfileIndex::build(const StepProfile& p, std::string* error) {
  auto bad = [&](const std::string& msg) {
    if (error != nullptr) *error = msg;
    return false;
  };
  if (p.period == 0) return bad("profile: period is 0");
  if (p.phases.size() != p.period) return bad("profile: phases.size() != period");
  const uint32_t P = p.period;
  period_ = P;
  objects_.clear();
  by_tag_.clear();
  dropped_accesses_ = 0;
  durations_.assign(P, 0);
  for (uint32_t k = 0; k < P; ++k) durations_[k] = p.phases[k].duration_ns;
  prefix_.assign(3 * static_cast<size_t>(P) + 1, 0);
  for (size_t i = 0; i < 3 * static_cast<size_t>(P); ++i) prefix_[i + 1] = prefix_[i] + durations_[i % P];
  by_phase_.assign(P, {});
  births_.assign(P, {});
  deaths_.assign(P, {});
  live_bytes_.assign(P, 0);
  objects_.reserve(p.objects.size());
  by_tag_.reserve(p.objects.size() * 2);
  for (size_t i = 0; i < p.objects.size(); ++i) {
    const ObjectProfile& src = p.objects[i];
    const std::string where = "profile: objects[" + std::to_string(i) + "]";
    if (src.birth_phase >= P) return bad(where + ": birth_phase >= period");
    if (src.death_phase < src.birth_phase) return bad(where + ": death_phase < birth_phase");
    if (!by_tag_.emplace(src.tag, static_cast<uint32_t>(i)).second)
      return bad(where + ": duplicate tag");
    ObjectView o;
    o.tag = src.tag;
    o.size = src.size;
    o.cyclic = src.persistent;
    o.birth = o.cyclic ? 0 : src.birth_phase;
    uint64_t life = static_cast<uint64_t>(src.death_phase) - src.birth_phase + 1;
    o.life = o.cyclic ? P : static_cast<uint32_t>(std::min<uint64_t>(life, P));
    for (const PhaseAccess& a : src.accesses) {
      if (a.phase >= P) {
        ++dropped_accesses_;
        continue;
      }
      uint32_t off = o.cyclic ? a.phase : (a.phase + P - o.birth) % P;
      if (off >= o.life) {
        ++dropped_accesses_;
        continue;
      }
      // Traffic, not touches (profile_index.h): with write-backs counted, a store that misses reads its
      // line too (read-for-ownership) and the memory is written when the dirty line leaves the cache.
      const uint64_t read_lines = p.writebacks_counted ? a.reads + a.writes : a.reads;
      const uint64_t write_lines = p.writebacks_counted ? a.writebacks : a.writes;
      o.accesses.push_back({off, read_lines, write_lines});
      o.total_accesses += read_lines + write_lines;
    }
    std::sort(o.accesses.begin(), o.accesses.end(),
              [](const AccessView& x, const AccessView& y) { return x.offset < y.offset; });
    objects_.push_back(std::move(o));
  }
  for (uint32_t i = 0; i < objects_.size(); ++i) {
    const ObjectView& o = objects_[i];
    for (const AccessView& a : o.accesses) {
      uint32_t phase = o.cyclic ? a.offset : (o.birth + a.offset) % P;
      by_phase_[phase].push_back({i, a.reads, a.writes});
    }
    if (o.cyclic) {
      for (uint32_t k = 0; k < P; ++k) live_bytes_[k] += o.size;
      continue;
    }
    births_[o.birth].push_back(i);
    deaths_[(o.birth + o.life) % P].push_back(i);
  }
  // Difference array for non-cyclic lifetimes.
  std::vector<int64_t> diff(P + 1, 0);
  for (const ObjectView& o : objects_) {
    if (o.cyclic) continue;
    uint32_t end = o.birth + o.life;  // exclusive, may exceed P
    if (end <= P) {
      diff[o.birth] += static_cast<int64_t>(o.size);
      diff[end] -= static_cast<int64_t>(o.size);
    } else {
      diff[o.birth] += static_cast<int64_t>(o.size);
      diff[P] -= static_cast<int64_t>(o.size);
      diff[0] += static_cast<int64_t>(o.size);
      diff[end - P] -= static_cast<int64_t>(o.size);
    }
  }
  int64_t run = 0;
  peak_bytes_ = 0;
  for (uint32_t k = 0; k < P; ++k) {
    run += diff[k];
    live_bytes_[k] += static_cast<uint64_t>(run);
    peak_bytes_ = std::max(peak_bytes_, live_bytes_[k]);
  }
  return true;
}

uint64_t ProfileIndex::time_between(uint64_t from, uint64_t to) const {
  uint64_t f = from % period_;
  uint64_t t = f + (to >= from ? to - from : 0);
  if (t > 3 * static_cast<uint64_t>(period_)) t = 3 * static_cast<uint64_t>(period_);
  return prefix_[t] - prefix_[f];
}

int64_t ProfileIndex::find(uint64_t tag) const {
  auto it = by_tag_.find(tag);
  return it == by_tag_.end() ? -1 : static_cast<int64_t>(it->second);
}

}  // namespace sentinel
