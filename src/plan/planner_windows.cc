#include "plan/planner_windows.h"

#include <algorithm>

namespace sentinel::plan_detail {

uint32_t abs_phase(const ProfileIndex& index, const ObjectView& o, int64_t offset) {
  const int64_t P = index.period();
  int64_t x = (o.cyclic ? offset : static_cast<int64_t>(o.birth) + offset) % P;
  return static_cast<uint32_t>(x < 0 ? x + P : x);
}

uint64_t span_ns(const ProfileIndex& index, const ObjectView& o, int64_t a, int64_t b) {
  if (b <= a) return 0;
  uint64_t from = abs_phase(index, o, a);
  return index.time_between(from, from + static_cast<uint64_t>(b - a));
}

int64_t prefetch_offset(const ProfileIndex& index, const ObjectView& o, int64_t target, int64_t lo,
                        double need_ns, uint32_t extra, bool* tight) {
  int64_t p = target;
  double acc = 0;
  while (p > lo && acc < need_ns) {
    --p;
    acc += static_cast<double>(index.duration(abs_phase(index, o, p)));
  }
  *tight = acc < need_ns;
  return std::max(lo, p - static_cast<int64_t>(extra));
}

namespace {

struct Ctx {
  const ProfileIndex& index;
  const MemorySystem& mem;
  const PlannerConfig& cfg;
  double rp, wp;
};

// Phases after an eviction at `at` until the copy is done (at least one), plus one of margin.
int64_t eviction_tail(const Ctx& c, const ObjectView& o, int64_t at, double copy_ns) {
  int64_t t = 0;
  double acc = 0;
  const int64_t limit = c.index.period();
  while (acc < copy_ns && t < limit) {
    acc += static_cast<double>(c.index.duration(abs_phase(c.index, o, at + t)));
    ++t;
  }
  return std::max<int64_t>(1, t) + 1;
}

// Worth a round trip: after the eviction phase, the lookahead phases and the prefetch phase, at least
// min_gap_phases phases remain out of fast memory, and the gap lasts gap_slack copy round trips.
bool long_gap(const Ctx& c, const ObjectView& o, int64_t last_use, int64_t next_use, double copy_ns,
              uint32_t lookahead) {
  const int64_t overhead = 2 + static_cast<int64_t>(lookahead);
  if (next_use - last_use - 1 < static_cast<int64_t>(c.cfg.min_gap_phases) + overhead) return false;
  return static_cast<double>(span_ns(c.index, o, last_use + 1, next_use)) >=
         c.cfg.gap_slack * 2.0 * copy_ns;
}

void finish(const Ctx& c, const ObjectView& o, uint32_t i, Window* w) {
  w->obj = i;
  const double copy = c.mem.migration_ns(static_cast<double>(o.size));
  int migrations = (w->born_fast || w->always ? 0 : 1) + (w->evict ? 1 : 0);
  w->benefit = w->access_value - c.cfg.migration_cost_factor * copy * migrations;
  const double phases = static_cast<double>(std::max<int64_t>(1, w->occ_end - w->start));
  w->density = w->benefit / (static_cast<double>(std::max<uint64_t>(1, o.size)) * phases);
}

double value_of(const Ctx& c, const std::vector<AccessView>& acc, size_t b, size_t e) {
  double v = 0;
  for (size_t j = b; j < e; ++j)
    v += static_cast<double>(acc[j].reads) * c.rp + static_cast<double>(acc[j].writes) * c.wp;
  return v;
}

// Shorter alternatives of a window: the same start, but evicted after an earlier use, leaving the
// group's later uses slow. A group is kept whole when its gaps are too short for a round trip, which
// makes a large object occupy fast memory across all of them; when only its first uses are hot (or
// the budget is contended later on), serving just those and evicting is worth more per byte-phase.
// Split points: the cfg.prefix_alternatives longest idle gaps inside the group that are long enough
// for the eviction copy (so the freed memory is usable before the next use). The alternatives overlap
// the group window's uses; the selection takes at most one of them.

template <typename ValueFn>
void add_prefix_alternatives(const Ctx& c, const ObjectView& o, const std::vector<int64_t>& off,
                             size_t gb, size_t ge, ValueFn&& group_value, std::vector<Window>* out) {
  if (ge - gb < 2) return;
  const double copy = c.mem.migration_ns(static_cast<double>(o.size));
  std::vector<std::pair<uint64_t, size_t>> gaps;  // (idle time, index of the last served use)
  for (size_t j = gb; j + 1 < ge; ++j) {
    if (off[j + 1] - off[j] < 2) continue;
    const uint64_t idle = span_ns(c.index, o, off[j] + 1, off[j + 1]);
    if (static_cast<double>(idle) >= copy) gaps.push_back({idle, j});
  }
  if (gaps.empty()) return;
  std::sort(gaps.begin(), gaps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (gaps.size() > c.cfg.prefix_alternatives) gaps.resize(c.cfg.prefix_alternatives);
  const Window base = out->back();
  for (const auto& g : gaps) {
    Window w = base;
    w.last_use = off[g.second];
    w.access_value = group_value(gb, g.second + 1);
    w.evict = true;
    w.occ_end = std::min<int64_t>(w.last_use + 1 + eviction_tail(c, o, w.last_use + 1, copy), o.life);
    finish(c, o, w.obj, &w);
    if (w.benefit > 0) out->push_back(w);
  }
}

// Coarser alternatives: runs of consecutive group windows held in fast memory through the gaps
// between them (one prefetch before the first, one eviction after the last). A gap long enough for a
// round trip is not necessarily worth one: when every use is worth about a round trip's copy cost,
// each single window has no benefit, while holding the object across the gaps serves all of them.
// Whether holding or moving is better depends on the budget left in the gap, which only the
// selection knows, so both are offered. Runs are formed by merging the shortest gaps first (at most
// cfg.merged_windows per object, O(g log g)); a persistent object's run never spans all of its windows (that
// is "always fast", which upgrade_holds considers).

void add_merged_windows(const Ctx& c, const ObjectView& o, const std::vector<size_t>& fine,
                        std::vector<Window>* out) {
  const size_t g = fine.size();
  if (g < 2) return;
  std::vector<std::pair<uint64_t, size_t>> gaps;  // (idle time, gap after window q)
  for (size_t q = 0; q + 1 < g; ++q) {
    const Window& a = (*out)[fine[q]];
    const Window& b = (*out)[fine[q + 1]];
    gaps.push_back({span_ns(c.index, o, a.last_use + 1, b.first_use), q});
  }
  std::sort(gaps.begin(), gaps.end());
  // Run of consecutive windows by its ends: left[e] = first window of the run ending at e, etc.
  std::vector<size_t> left(g), right(g);
  for (size_t q = 0; q < g; ++q) left[q] = right[q] = q;
  const int64_t P = c.index.period();
  size_t made = 0;
  for (const auto& gp : gaps) {
    if (made >= c.cfg.merged_windows) break;
    const size_t a = left[gp.second], b = right[gp.second + 1];
    right[a] = b;
    left[b] = a;
    if (o.cyclic && a == 0 && b == g - 1) continue;
    const Window& first = (*out)[fine[a]];
    const Window& last = (*out)[fine[b]];
    Window w = first;
    w.last_use = last.last_use;
    w.evict = last.evict;
    w.occ_end = last.occ_end;
    if (o.cyclic) w.occ_end = std::min<int64_t>(w.occ_end, w.start + P);
    w.access_value = 0;
    for (size_t q = a; q <= b; ++q) w.access_value += (*out)[fine[q]].access_value;
    finish(c, o, w.obj, &w);
    if (w.benefit > 0) out->push_back(w);  // never selected otherwise
    ++made;
  }
}

void object_windows(const Ctx& c, uint32_t i, std::vector<Window>* out) {
  const ObjectView& o = c.index.object(i);
  const int64_t P = c.index.period();
  const double copy = c.mem.migration_ns(static_cast<double>(o.size));
  uint32_t extra = c.cfg.lookahead_phases;
  if (auto it = c.cfg.extra_lookahead_phases.find(o.tag); it != c.cfg.extra_lookahead_phases.end())
    extra += it->second;
  const double need = c.cfg.prefetch_slack * copy + static_cast<double>(c.cfg.lookahead_ns);
  const auto& acc = o.accesses;

  if (!o.cyclic && o.life <= c.cfg.short_lived_phases) {
    Window w;
    w.born_fast = true;
    w.short_lived = true;
    w.start = 0;
    w.occ_end = o.life;
    w.first_use = acc.empty() ? 0 : acc.front().offset;
    w.last_use = acc.empty() ? 0 : acc.back().offset;
    // A tiny value even without sampled accesses: sampling can miss a short-lived object.
    w.access_value = value_of(c, acc, 0, acc.size()) + 1e-6 * static_cast<double>(o.size);
    finish(c, o, i, &w);
    out->push_back(w);
    return;
  }
  if (acc.empty()) return;  // cold: stays slow

  // Group accesses into windows separated by long gaps. Persistent objects: on the circle, starting
  // after one long gap (if there is none, the object is fast all the time or not at all).
  const size_t m = acc.size();
  std::vector<std::pair<size_t, size_t>> groups;  // [b, e) into an index sequence
  std::vector<int64_t> off;                       // unrolled offsets in visiting order
  std::vector<size_t> src;                        // index into acc of each visited access
  if (o.cyclic) {
    size_t first_split = m;
    for (size_t j = 0; j < m; ++j) {
      int64_t x = acc[j].offset, y = (j + 1 < m) ? acc[j + 1].offset : acc[0].offset + P;
      if (long_gap(c, o, x, y, copy, extra)) {
        first_split = j;
        break;
      }
    }
    if (first_split == m) {
      Window w;
      w.always = true;
      w.born_fast = true;
      w.start = 0;
      w.occ_end = P;
      w.first_use = acc.front().offset;
      w.last_use = acc.back().offset;
      w.access_value = value_of(c, acc, 0, m);
      finish(c, o, i, &w);
      out->push_back(w);
      return;
    }
    for (size_t j = 0; j < m; ++j) {
      size_t s = (first_split + 1 + j) % m;
      src.push_back(s);
      off.push_back(acc[s].offset + (first_split + 1 + j >= m ? P : 0));
    }
  } else {
    for (size_t j = 0; j < m; ++j) {
      src.push_back(j);
      off.push_back(acc[j].offset);
    }
  }
  size_t b = 0;
  for (size_t j = 1; j <= m; ++j) {
    if (j == m || long_gap(c, o, off[j - 1], off[j], copy, extra)) {
      groups.push_back({b, j});
      b = j;
    }
  }
  auto group_value = [&](size_t gb, size_t ge) {
    double v = 0;
    for (size_t j = gb; j < ge; ++j) v += value_of(c, acc, src[j], src[j] + 1);
    return v;
  };
  const size_t g = groups.size();
  std::vector<size_t> fine(g);  // index in *out of group q's window
  for (size_t q = 0; q < g; ++q) {
    Window w;
    w.first_use = off[groups[q].first];
    w.last_use = off[groups[q].second - 1];
    w.access_value = group_value(groups[q].first, groups[q].second);
    bool tight = false;
    if (o.cyclic) {
      const int64_t prev_last = q > 0 ? off[groups[q - 1].second - 1] : off[groups[g - 1].second - 1] - P;
      w.lo = prev_last + 2;
      w.start = prefetch_offset(c.index, o, w.first_use, w.lo, need, extra, &tight);
      w.evict = true;
    } else {
      if (q == 0) {
        w.lo = 1;
        w.start = w.first_use == 0 ? 0 : prefetch_offset(c.index, o, w.first_use, 1, need, extra, &tight);
        if (w.first_use == 0 || tight) {
          w.start = 0;
          w.born_fast = true;
        }
      } else {
        w.lo = off[groups[q - 1].second - 1] + 2;
        w.start = prefetch_offset(c.index, o, w.first_use, w.lo, need, extra, &tight);
      }
      const int64_t life = o.life;
      w.evict = q + 1 < g || (life - 1 - w.last_use >= static_cast<int64_t>(c.cfg.min_gap_phases) &&
                              static_cast<double>(span_ns(c.index, o, w.last_use + 1, life)) >=
                                  c.cfg.gap_slack * copy);
    }
    w.occ_end = w.evict ? w.last_use + 1 + eviction_tail(c, o, w.last_use + 1, copy) : w.last_use + 1;
    if (!o.cyclic) w.occ_end = w.evict ? std::min<int64_t>(w.occ_end, o.life) : o.life;
    if (o.cyclic) w.occ_end = std::min<int64_t>(w.occ_end, w.start + P);
    finish(c, o, i, &w);
    fine[q] = out->size();
    out->push_back(w);
    if (!o.cyclic) add_prefix_alternatives(c, o, off, groups[q].first, groups[q].second, group_value, out);
    if (!o.cyclic && q == 0 && !w.born_fast) {
      // Born fast instead of prefetched: a fresh allocation holds nothing worth copying, so a few
      // more phases of occupancy may be cheaper than a migration; the selection picks one of both.
      Window b = w;
      b.start = 0;
      b.born_fast = true;
      finish(c, o, i, &b);
      if (b.benefit > 0) out->push_back(b);
    }
  }
  add_merged_windows(c, o, fine, out);
}

}  // namespace

std::vector<Window> build_windows(const ProfileIndex& index, const MemorySystem& mem,
                                  const PlannerConfig& cfg) {
  Ctx c{index, mem, cfg, mem.read_penalty_ns(), mem.write_penalty_ns()};
  std::vector<Window> out;
  out.reserve(index.objects().size() * 2);
  for (uint32_t i = 0; i < index.objects().size(); ++i) object_windows(c, i, &out);
  return out;
}

}  // namespace sentinel::plan_detail
