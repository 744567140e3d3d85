#include "plan/budget_repair.h"

#include <algorithm>
#include <queue>

namespace sentinel {
namespace {

struct ObjMove {
  uint32_t event;
  uint32_t offset;  // lifetime offset (cyclic: the event)
  uint32_t id;      // flattened move index
  MoveKind kind;
};

// Every object's moves in lifetime order, skipping moves of unknown tags and at dead events.
std::vector<std::vector<ObjMove>> moves_by_object(const ProfileIndex& index, const Plan& plan) {
  std::vector<std::vector<ObjMove>> out(index.objects().size());
  uint32_t id = 0;
  for (uint32_t k = 0; k < plan.events.size(); ++k) {
    for (const Move& m : plan.events[k]) {
      const uint32_t this_id = id++;
      int64_t i = index.find(m.tag);
      if (i < 0) continue;
      const ObjectView& o = index.object(static_cast<uint32_t>(i));
      if (!index.alive_at(o, k)) continue;
      out[i].push_back({k, index.offset_of(o, k), this_id, m.kind});
    }
  }
  for (auto& v : out) {
    std::stable_sort(v.begin(), v.end(), [](const ObjMove& a, const ObjMove& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.id < b.id;
    });
  }
  return out;
}

double access_value(const ObjectView& o, uint32_t period, uint64_t begin, uint64_t end,
                    double rp, double wp) {
  double v = 0;
  for (const AccessView& a : o.accesses) {
    uint64_t off = a.offset;
    bool in = (off >= begin && off < end) || (o.cyclic && off + period >= begin && off + period < end);
    if (in) v += static_cast<double>(a.reads) * rp + static_cast<double>(a.writes) * wp;
  }
  return v;
}

void rebuild_events(Plan* plan, const std::vector<bool>& removed) {
  uint32_t id = 0;
  for (auto& ev : plan->events) {
    std::vector<Move> kept;
    kept.reserve(ev.size());
    for (const Move& m : ev) {
      if (!removed[id++]) kept.push_back(m);
    }
    ev.swap(kept);
  }
}

}  // namespace

std::vector<FastInterval> fast_intervals(const ProfileIndex& index, const Plan& plan,
                                         const MemorySystem& mem, const std::vector<uint32_t>& busy) {
  const uint32_t P = index.period();
  const double rp = mem.read_penalty_ns(), wp = mem.write_penalty_ns();
  auto per_obj = moves_by_object(index, plan);
  std::vector<FastInterval> out;
  for (uint32_t i = 0; i < index.objects().size(); ++i) {
    const ObjectView& o = index.object(i);
    const uint32_t span = o.cyclic ? P : o.life;
    struct Raw { int64_t start_move, end_move; uint32_t start, end; bool from_birth; };
    std::vector<Raw> raw;
    bool fast = plan.birth(o.tag) == Tier::kFast;
    Raw cur{-1, -1, 0, 0, true};
    for (const ObjMove& m : per_obj[i]) {
      if (m.kind == MoveKind::kPrefetch && !fast) {
        fast = true;
        cur = Raw{m.id, -1, m.offset, 0, false};
      } else if (m.kind == MoveKind::kEvict && fast) {
        fast = false;
        cur.end_move = m.id;
        cur.end = m.offset;
        raw.push_back(cur);
      }
    }
    if (fast) {
      cur.end = span;
      raw.push_back(cur);
    }
    // A persistent object fast across the step boundary: one interval from the last prefetch
    // through the wrap to the first eviction.
    if (o.cyclic && raw.size() >= 2 && raw.front().from_birth && raw.back().end == P &&
        !raw.back().from_birth) {
      Raw merged{raw.back().start_move, raw.front().end_move, raw.back().start, P + raw.front().end,
                 true};
      raw.pop_back();
      raw.front() = merged;
    }
    for (const Raw& r : raw) {
      FastInterval f;
      f.obj = i;
      f.start_move = r.start_move;
      f.end_move = r.end_move;
      f.from_birth = r.from_birth;
      uint64_t end = r.end;
      if (r.end_move >= 0) {
        uint32_t b = static_cast<size_t>(r.end_move) < busy.size() ? busy[r.end_move] : 1;
        end += std::max<uint32_t>(1, b);
      }
      if (!o.cyclic) end = std::min<uint64_t>(end, o.life);
      uint64_t cover = end > r.start ? end - r.start : 1;
      f.cover = static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(cover, 1), P));
      f.start_phase = o.cyclic ? r.start % P : (o.birth + r.start) % P;
      f.value = access_value(o, P, r.start, r.end, rp, wp);
      out.push_back(f);
    }
  }
  return out;
}

void normalize_plan(const ProfileIndex& index, Plan* plan) {
  const auto per_obj = moves_by_object(index, *plan);
  // Drop moves at dead events (moves_by_object left them out) and moves of unknown tags.
  std::vector<bool> keep(plan->move_count(), false);
  for (uint32_t i = 0; i < per_obj.size(); ++i) {
    for (const ObjMove& m : per_obj[i]) keep[m.id] = true;
    const ObjectView& o = index.object(i);
    if (o.cyclic && !per_obj[i].empty()) {
      plan->birth_tier[o.tag] =
          per_obj[i].back().kind == MoveKind::kPrefetch ? Tier::kFast : Tier::kSlow;
    }
  }
  std::vector<bool> removed(keep.size());
  for (size_t j = 0; j < keep.size(); ++j) removed[j] = !keep[j];
  rebuild_events(plan, removed);
}

uint32_t check_plan_budget(const ProfileIndex& index, const Plan& plan, const MemorySystem& mem,
                           uint64_t budget, uint64_t* peak) {
  SimOptions opt;
  opt.slow_penalty = false;
  opt.stalls = false;
  opt.budget_bytes = budget == 0 ? 0 : budget;
  SimResult r;
  if (!simulate_plan(index, plan, mem, opt, &r, nullptr)) return UINT32_MAX;
  if (peak != nullptr) *peak = r.dram_peak_bytes;
  if (budget == 0) return r.dram_peak_bytes > 0 ? 1 : 0;
  return r.budget_violations;
}

void drop_intervals(const ProfileIndex& index, const std::vector<FastInterval>& drop, Plan* plan) {
  std::vector<bool> removed(plan->move_count(), false);
  for (const FastInterval& f : drop) {
    if (f.start_move >= 0) removed[f.start_move] = true;
    if (f.end_move >= 0) removed[f.end_move] = true;
    if (f.from_birth) plan->birth_tier[index.object(f.obj).tag] = Tier::kSlow;
  }
  rebuild_events(plan, removed);
}

bool enforce_budget(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, Plan* plan,
                    RepairStats* stats, std::string* error) {
  const uint32_t P = index.period();
  RepairStats local;
  RepairStats& st = stats != nullptr ? *stats : local;
  constexpr uint32_t kMaxRounds = 64;
  for (uint32_t round = 0; round < kMaxRounds; ++round) {
    SimOptions opt;
    opt.slow_penalty = false;
    opt.stalls = false;
    opt.budget_bytes = budget;
    opt.record_moves = true;
    SimResult r;
    if (!simulate_plan(index, *plan, mem, opt, &r, error)) return false;
    if (budget > 0 && r.budget_violations == 0) return true;
    if (budget == 0 && r.dram_peak_bytes == 0) return true;
    ++st.rounds;
    std::vector<FastInterval> iv = fast_intervals(index, *plan, mem, r.move_busy_phases);
    // Sweep the phases; at each phase above budget drop the active intervals of least value per
    // byte until the excess is covered. Wrapping intervals are split into two linear pieces.
    struct Piece { uint32_t begin, end, interval; };
    std::vector<std::vector<Piece>> starts(P);
    for (uint32_t j = 0; j < iv.size(); ++j) {
      uint32_t b = iv[j].start_phase, e = b + iv[j].cover;
      if (e <= P) {
        starts[b].push_back({b, e, j});
      } else {
        starts[b].push_back({b, P, j});
        starts[0].push_back({0, e - P, j});
      }
    }
    auto density = [&](uint32_t j) {
      return iv[j].value / static_cast<double>(std::max<uint64_t>(1, index.object(iv[j].obj).size));
    };
    using Entry = std::pair<double, uint32_t>;  // (density, piece index into flat list)
    std::vector<Piece> flat;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    std::vector<bool> dropped(iv.size(), false);
    std::vector<uint64_t> dropped_bytes(P + 1, 0);
    std::vector<FastInterval> to_drop;
    for (uint32_t k = 0; k < P; ++k) {
      for (const Piece& pc : starts[k]) {
        flat.push_back(pc);
        heap.push({density(pc.interval), static_cast<uint32_t>(flat.size() - 1)});
      }
      const uint64_t limit = budget;
      if (r.residency[k] <= limit) continue;
      int64_t excess = static_cast<int64_t>(r.residency[k] - limit) -
                       static_cast<int64_t>(dropped_bytes[k]);
      while (excess > 0 && !heap.empty()) {
        Piece pc = flat[heap.top().second];
        heap.pop();
        if (pc.end <= k || dropped[pc.interval]) continue;
        dropped[pc.interval] = true;
        to_drop.push_back(iv[pc.interval]);
        const uint64_t size = index.object(iv[pc.interval].obj).size;
        excess -= static_cast<int64_t>(size);
        uint32_t b = iv[pc.interval].start_phase;
        for (uint32_t c = 0; c < iv[pc.interval].cover; ++c) dropped_bytes[(b + c) % P] += size;
      }
    }
    if (to_drop.empty()) break;  // nothing left to drop that covers the excess: give up below
    st.dropped_intervals += static_cast<uint32_t>(to_drop.size());
    drop_intervals(index, to_drop, plan);
  }
  // Should not happen (every resident byte belongs to some interval); stay correct regardless.
  st.fell_back_to_all_slow = true;
  for (auto& e : plan->events) e.clear();
  for (auto& [tag, tier] : plan->birth_tier) tier = Tier::kSlow;
  return true;
}

int advance_prefetch(const ProfileIndex& index, uint64_t tag, uint32_t phases, Plan* plan,
                     std::string* error) {
  int64_t i = index.find(tag);
  if (i < 0) {
    if (error != nullptr) *error = "advance_prefetch: unknown tag";
    return -1;
  }
  const ObjectView& o = index.object(static_cast<uint32_t>(i));
  const uint32_t P = index.period();
  auto per_obj = moves_by_object(index, *plan);
  const auto& mv = per_obj[i];
  struct Change { uint32_t id, new_event; bool to_birth; };
  std::vector<Change> changes;
  for (size_t j = 0; j < mv.size(); ++j) {
    if (mv[j].kind != MoveKind::kPrefetch) continue;
    int64_t lo;  // earliest offset allowed
    if (j > 0) lo = static_cast<int64_t>(mv[j - 1].offset) + 1;
    else if (o.cyclic && mv.size() > 1) lo = static_cast<int64_t>(mv.back().offset) + 1 - P;
    else if (o.cyclic) lo = static_cast<int64_t>(mv[j].offset) + 1 - P;
    else lo = 0;
    int64_t want = std::max<int64_t>(lo, static_cast<int64_t>(mv[j].offset) - phases);
    if (want >= mv[j].offset) continue;
    if (!o.cyclic && want <= 0 && j == 0) {
      changes.push_back({mv[j].id, 0, true});
      continue;
    }
    uint32_t ev = o.cyclic ? static_cast<uint32_t>((want + P) % P)
                           : static_cast<uint32_t>((o.birth + want) % P);
    changes.push_back({mv[j].id, ev, false});
  }
  bool has_prefetch = std::any_of(mv.begin(), mv.end(),
                                  [](const ObjMove& m) { return m.kind == MoveKind::kPrefetch; });
  if (!has_prefetch) {
    if (error != nullptr) *error = "advance_prefetch: the tag has no prefetch";
    return -1;
  }
  std::vector<bool> removed(plan->move_count(), false);
  for (const Change& c : changes) removed[c.id] = true;
  rebuild_events(plan, removed);
  for (const Change& c : changes) {
    if (c.to_birth) plan->birth_tier[tag] = Tier::kFast;
    else plan->events[c.new_event].push_back({tag, MoveKind::kPrefetch});
  }
  if (o.cyclic) normalize_plan(index, plan);  // a prefetch moved across event 0 changes the birth tier
  return static_cast<int>(changes.size());
}

}  // namespace sentinel
