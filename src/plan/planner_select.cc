#include "plan/planner_select.h"

#include <algorithm>

#include "plan/channel_model.h"

namespace sentinel::plan_detail {

uint32_t occ_len(const Window& w, uint32_t P) {
  return static_cast<uint32_t>(std::clamp<int64_t>(w.occ_end - w.start, 1, P));
}

namespace {

// Admits a window if its prefetch can finish before the first use and the occupancy (prefetch start
// to eviction done, both estimated on the channel model) fits the budget at every phase.
bool admit_window(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, Window* w,
                  OccupancyTree* tree, ChannelModel* channel) {
  const uint32_t P = index.period();
  const ObjectView& o = index.object(w->obj);
  const double copy = mem.migration_ns(static_cast<double>(o.size));
  int64_t start = w->start;
  bool born_fast = w->born_fast || w->always;
  if (!born_fast) {
    bool on_time = false;
    for (int attempt = 0; attempt < 8 && !on_time; ++attempt) {
      uint32_t j = channel->fill(abs_phase(index, o, start), copy, false);
      int64_t done = start + static_cast<int64_t>(j);
      if (j < P && done < w->first_use) {
        on_time = true;
        break;
      }
      int64_t earlier = std::max(w->lo, start - std::max<int64_t>(1, done - (w->first_use - 1)));
      if (earlier == start) break;
      start = earlier;
    }
    if (!on_time) {
      if (o.cyclic || w->lo > 1) return false;
      born_fast = true;  // no time to prefetch after birth: allocate it fast instead
      start = 0;
    }
  }
  int64_t occ_end = w->occ_end;
  uint32_t evict_phases = 0;
  if (w->evict) {
    evict_phases = channel->fill(abs_phase(index, o, w->last_use + 1), copy, false);
    if (evict_phases >= P) return false;
    occ_end = w->last_use + 1 + evict_phases + 1;  // through the phase the copy completes in
    if (!o.cyclic) occ_end = std::min<int64_t>(occ_end, o.life);
  }
  if (o.cyclic) occ_end = std::min<int64_t>(occ_end, start + P);
  const uint32_t abs_start = abs_phase(index, o, start);
  const uint32_t len = static_cast<uint32_t>(std::clamp<int64_t>(occ_end - start, 1, P));
  if (!tree->fits(abs_start, len, o.size, budget)) return false;
  if (!born_fast) channel->fill(abs_start, copy, true);
  if (w->evict) channel->fill(abs_phase(index, o, w->last_use + 1), copy, true);
  tree->add(abs_start, len, static_cast<int64_t>(o.size));
  w->start = start;
  w->born_fast = born_fast;
  w->occ_end = occ_end;
  w->selected = true;
  return true;
}

// Selected windows per object, to keep alternatives (overlapping use ranges) mutually exclusive.
class UseExclusion {
 public:
  explicit UseExclusion(size_t objects) : sel_(objects) {}
  bool blocked(const std::vector<Window>& win, size_t j) const {
    const Window& w = win[j];
    for (size_t k : sel_[w.obj])
      if (win[k].first_use <= w.last_use && w.first_use <= win[k].last_use) return true;
    return false;
  }
  const std::vector<size_t>& selected_of(uint32_t obj) const { return sel_[obj]; }
  void add(const std::vector<Window>& win, size_t j) { sel_[win[j].obj].push_back(j); }
  void remove(const std::vector<Window>& win, size_t j) {
    auto& v = sel_[win[j].obj];
    v.erase(std::remove(v.begin(), v.end(), j), v.end());
  }

 private:
  std::vector<std::vector<size_t>> sel_;
};

bool ranges_overlap(uint32_t s1, uint32_t l1, uint32_t s2, uint32_t l2, uint32_t P) {
  return (s2 + P - s1) % P < l1 || (s1 + P - s2) % P < l2;
}

// The greedy by density packs many small windows first; a large window worth more than all the
// small ones it overlaps then never fits (a knapsack's classic failure). The exchange pass offers
// the max_cands unselected windows of highest benefit a swap: the selected windows of the same
// object serving some of its uses, then those overlapping its occupancy (least dense first) are
// taken out until it fits; the swap is kept when it is admitted (on time, within budget) and both
// the benefit and the access value taken out are smaller than its own (benefit alone undervalues
// windows whose migrations are cheap on an idle channel). Channel capacity of removed windows is not
// given back (conservative: later prefetches look later). Returns whether anything changed.

bool uses_overlap(const Window& a, const Window& b) {
  return a.obj == b.obj && a.first_use <= b.last_use && b.first_use <= a.last_use;
}

bool exchange_pass(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, size_t max_cands,
                   std::vector<Window>* win, OccupancyTree* tree, ChannelModel* channel,
                   UseExclusion* excl) {
  const uint32_t P = index.period();
  std::vector<size_t> cands;
  for (size_t j = 0; j < win->size(); ++j) {
    const Window& w = (*win)[j];
    if (!w.selected && w.benefit > 0) cands.push_back(j);
  }
  auto by_benefit = [&](size_t a, size_t b) { return (*win)[a].benefit > (*win)[b].benefit; };
  if (cands.size() > max_cands) {
    std::partial_sort(cands.begin(), cands.begin() + max_cands, cands.end(), by_benefit);
    cands.resize(max_cands);
  } else {
    std::sort(cands.begin(), cands.end(), by_benefit);
  }
  std::vector<size_t> selected;  // may hold stale entries (checked via Window::selected)
  for (size_t j = 0; j < win->size(); ++j)
    if ((*win)[j].selected) selected.push_back(j);
  bool changed = false;
  std::vector<size_t> victims, removed;
  auto take = [&](size_t j, int64_t sign) {
    const Window& v = (*win)[j];
    const ObjectView& vo = index.object(v.obj);
    tree->add(abs_phase(index, vo, v.start), occ_len(v, P), sign * static_cast<int64_t>(vo.size));
  };
  for (size_t cj : cands) {
    Window& c = (*win)[cj];
    if (c.selected) continue;
    const ObjectView& co = index.object(c.obj);
    const uint32_t cs = abs_phase(index, co, c.start), cl = occ_len(c, P);
    // Windows of the same object serving some of the same uses must go (the candidate replaces
    // them); then others overlapping in time, least dense first.
    removed.clear();
    double lost = 0, lost_value = 0;
    for (size_t j : excl->selected_of(c.obj)) {
      if (!uses_overlap((*win)[j], c)) continue;
      removed.push_back(j);
      lost += (*win)[j].benefit;
      lost_value += (*win)[j].access_value;
    }
    if (lost >= c.benefit || lost_value >= c.access_value) continue;
    for (size_t j : removed) take(j, -1);
    victims.clear();
    for (size_t j : selected) {
      const Window& v = (*win)[j];
      if (!v.selected || v.benefit >= c.benefit || uses_overlap(v, c)) continue;
      if (ranges_overlap(cs, cl, abs_phase(index, index.object(v.obj), v.start), occ_len(v, P), P))
        victims.push_back(j);
    }
    // Least dense first; a heap, since usually only a few are taken.
    auto denser = [&](size_t a, size_t b) { return (*win)[a].density > (*win)[b].density; };
    std::make_heap(victims.begin(), victims.end(), denser);
    for (auto end = victims.end(); end != victims.begin(); --end) {
      if (tree->fits(cs, cl, co.size, budget)) break;
      std::pop_heap(victims.begin(), end, denser);
      const size_t j = *(end - 1);
      if (lost + (*win)[j].benefit >= c.benefit ||
          lost_value + (*win)[j].access_value >= c.access_value) break;
      take(j, -1);
      removed.push_back(j);
      lost += (*win)[j].benefit;
      lost_value += (*win)[j].access_value;
    }
    if (!removed.empty() && lost < c.benefit && tree->fits(cs, cl, co.size, budget) &&
        admit_window(index, mem, budget, &c, tree, channel)) {
      for (size_t j : removed) {
        (*win)[j].selected = false;
        excl->remove(*win, j);
      }
      excl->add(*win, cj);
      selected.push_back(cj);
      changed = true;
    } else {
      for (size_t j : removed) take(j, +1);
    }
  }
  return changed;
}

}  // namespace

// With budget to spare, holding an object in fast memory beats moving it: merge consecutive selected
// windows of an object (no eviction and prefetch between them) and keep objects whose windows were
// not worth a migration fast for their whole lifetime. Cheapest extra byte-phases first.
namespace {

double whole_value(const ObjectView& o, const MemorySystem& mem) {
  const double rp = mem.read_penalty_ns(), wp = mem.write_penalty_ns();
  double v = 0;
  for (const AccessView& a : o.accesses) v += static_cast<double>(a.reads) * rp + static_cast<double>(a.writes) * wp;
  return v;
}

// Replaces the object's windows by one that holds it fast for its whole lifetime (born fast, never
// moved), kept in the slot of its first window. The caller has made room in the tree.
void hold_whole_life(const ProfileIndex& index, const MemorySystem& mem, const std::vector<size_t>& windows,
                     std::vector<Window>* win) {
  const uint32_t P = index.period();
  const ObjectView& o = index.object((*win)[windows.front()].obj);
  Window whole = (*win)[windows.front()];
  for (size_t j : windows) (*win)[j].selected = false;
  whole.start = 0;
  whole.occ_end = o.cyclic ? P : o.life;
  whole.born_fast = true;
  whole.always = o.cyclic;
  whole.evict = false;
  whole.first_use = o.accesses.front().offset;
  whole.last_use = o.accesses.back().offset;
  whole.access_value = whole_value(o, mem);
  whole.selected = true;
  (*win)[windows.front()] = whole;
}

std::vector<std::vector<size_t>> windows_by_object(const ProfileIndex& index, const std::vector<Window>& win) {
  std::vector<std::vector<size_t>> by_obj(index.objects().size());
  for (size_t j = 0; j < win.size(); ++j) by_obj[win[j].obj].push_back(j);
  return by_obj;
}

}  // namespace

void upgrade_holds(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                   std::vector<Window>* win, OccupancyTree* tree) {
  const uint32_t P = index.period();
  const std::vector<std::vector<size_t>> by_obj = windows_by_object(index, *win);
  struct Cand { double density; uint32_t obj; };
  std::vector<Cand> cands;
  for (uint32_t i = 0; i < by_obj.size(); ++i) {
    const ObjectView& o = index.object(i);
    if (o.total_accesses == 0 || by_obj[i].empty()) continue;
    double occupied = 0;
    const double value = whole_value(o, mem);
    for (size_t j : by_obj[i]) {
      const Window& w = (*win)[j];
      if (w.selected) occupied += static_cast<double>(occ_len(w, P));
    }
    const double life = o.cyclic ? P : o.life;
    const double extra = std::max(1.0, life - occupied);
    if (occupied >= life) continue;
    cands.push_back({value / (static_cast<double>(o.size) * extra), i});
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.density > b.density; });
  for (const Cand& c : cands) {
    const ObjectView& o = index.object(c.obj);
    const uint32_t start = o.cyclic ? 0 : o.birth, len = o.cyclic ? P : o.life;
    // Take the object's windows out, try the whole lifetime, put them back if it does not fit.
    for (size_t j : by_obj[c.obj]) {
      const Window& w = (*win)[j];
      if (w.selected) tree->add(abs_phase(index, o, w.start), occ_len(w, P), -static_cast<int64_t>(o.size));
    }
    if (tree->fits(start, len, o.size, budget)) {
      tree->add(start, len, static_cast<int64_t>(o.size));
      hold_whole_life(index, mem, by_obj[c.obj], win);
    } else {
      for (size_t j : by_obj[c.obj]) {
        const Window& w = (*win)[j];
        if (w.selected) tree->add(abs_phase(index, o, w.start), occ_len(w, P), static_cast<int64_t>(o.size));
      }
    }
  }
}

void select_windows(const ProfileIndex& index, const MemorySystem& mem, const PlannerConfig& cfg,
                    uint64_t budget, std::vector<Window>* win, OccupancyTree* tree,
                    const std::vector<uint32_t>& held_objects) {
  const uint32_t P = index.period();
  // The seed: objects held fast for their whole lifetime before anything else is chosen.
  std::vector<bool> held(index.objects().size(), false);
  if (!held_objects.empty()) {
    const std::vector<std::vector<size_t>> by_obj = windows_by_object(index, *win);
    for (uint32_t i : held_objects) {
      if (i >= by_obj.size() || by_obj[i].empty() || held[i]) continue;
      const ObjectView& o = index.object(i);
      const uint32_t start = o.cyclic ? 0 : o.birth, len = o.cyclic ? P : o.life;
      if (!tree->fits(start, len, o.size, budget)) continue;
      tree->add(start, len, static_cast<int64_t>(o.size));
      hold_whole_life(index, mem, by_obj[i], win);
      held[i] = true;
    }
  }
  // Reserved share for short-lived objects: their peak, at most short_reserve_max_share of budget.
  std::vector<int64_t> short_diff(P + 1, 0);
  // Short-lived objects without sampled accesses are kept fast only where nothing else wants the
  // space (they come last in the greedy, by their token value), so they take no reserve.
  for (const Window& w : *win) {
    if (!w.short_lived || index.object(w.obj).total_accesses == 0) continue;
    const ObjectView& o = index.object(w.obj);
    uint32_t b = o.birth, e = o.birth + o.life;
    short_diff[b] += static_cast<int64_t>(o.size);
    if (e <= P) short_diff[e] -= static_cast<int64_t>(o.size);
    else { short_diff[P] -= static_cast<int64_t>(o.size); short_diff[0] += static_cast<int64_t>(o.size); short_diff[e - P] -= static_cast<int64_t>(o.size); }
  }
  int64_t run = 0, short_peak = 0;
  for (uint32_t k = 0; k < P; ++k) short_peak = std::max(short_peak, run += short_diff[k]);
  const uint64_t reserve = std::min<uint64_t>(static_cast<uint64_t>(short_peak),
                                              static_cast<uint64_t>(cfg.short_reserve_max_share * budget));
  std::vector<size_t> order(win->size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return (*win)[a].density > (*win)[b].density;
  });
  OccupancyTree short_tree(P);
  for (size_t j : order) {
    Window& w = (*win)[j];
    if (!w.short_lived || index.object(w.obj).total_accesses == 0 || held[w.obj]) continue;
    const ObjectView& o = index.object(w.obj);
    uint32_t start = abs_phase(index, o, w.start), len = occ_len(w, P);
    if (short_tree.fits(start, len, o.size, reserve) && tree->fits(start, len, o.size, budget)) {
      w.selected = true;
      short_tree.add(start, len, static_cast<int64_t>(o.size));
      tree->add(start, len, static_cast<int64_t>(o.size));
    }
  }
  ChannelModel channel(index);
  UseExclusion excl(index.objects().size());
  for (size_t j = 0; j < win->size(); ++j)
    if ((*win)[j].selected) excl.add(*win, j);
  auto greedy = [&] {
    for (size_t j : order) {
      Window& w = (*win)[j];
      if (w.selected || w.benefit <= 0 || excl.blocked(*win, j)) continue;
      if (!admit_window(index, mem, budget, &w, tree, &channel)) continue;
      excl.add(*win, j);
    }
  };
  greedy();
  // Refill around the exchanged windows.
  if (cfg.exchange_candidates > 0 &&
      exchange_pass(index, mem, budget, cfg.exchange_candidates, win, tree, &channel, &excl))
    greedy();
  upgrade_holds(index, mem, budget, win, tree);
}


}  // namespace sentinel::plan_detail
