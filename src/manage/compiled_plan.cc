#include "manage/compiled_plan.h"

namespace sentinel::manage {
namespace {

// The plan's intended tier of one object at every phase of its lifetime: its birth tier, changed by the
// plan's moves in issue order (timing left out: this is what the plan asks for, not when it arrives).
std::vector<Tier> intended_tiers(const ProfileIndex& index, const ObjectView& o, const Plan& plan) {
  const uint32_t period = index.period();
  const uint32_t life = o.cyclic ? period : o.life;
  std::vector<Tier> tiers(life);
  Tier tier = plan.birth(o.tag);
  for (uint32_t off = 0; off < life; ++off) {
    const uint32_t event = o.cyclic ? off : (o.birth + off) % period;
    for (const Move& m : plan.events[event]) {
      if (m.tag == o.tag) tier = m.kind == MoveKind::kPrefetch ? Tier::kFast : Tier::kSlow;
    }
    tiers[off] = tier;
  }
  return tiers;
}

}  // namespace

std::vector<uint64_t> expected_tags(const ProfileIndex& index) {
  std::vector<uint64_t> tags(index.period(), 0);
  for (const ObjectView& o : index.objects()) {
    if (!o.cyclic) tags[o.birth] = o.tag;
  }
  return tags;
}

bool CompiledPlan::compile(const Plan& plan, const ProfileIndex& index, ExtentOf extent_of, std::string* error) {
  const uint32_t period = index.period();
  if (plan.period != period || plan.events.size() != period) {
    *error = "the plan's period (" + std::to_string(plan.period) + ") is not the profile's (" +
             std::to_string(period) + ")";
    return false;
  }
  period_ = period;
  policy_ = plan.policy;
  budget_bytes_ = plan.summary.budget_bytes;
  migrated_bytes_ = 0;
  expected_tag_ = manage::expected_tags(index);
  moves_.assign(period, {});
  fast_uses_.assign(period, {});
  objects_.clear();

  for (const ObjectView& o : index.objects()) {
    PlannedObject po;
    po.birth = plan.birth(o.tag);
    po.bytes = extent_of(o.size);
    po.persistent = o.cyclic;
    po.birth_event = o.birth;
    objects_.emplace(o.tag, po);
    const std::vector<Tier> tiers = intended_tiers(index, o, plan);
    for (const AccessView& a : o.accesses) {
      if (a.offset >= tiers.size() || tiers[a.offset] != Tier::kFast) continue;
      const uint32_t phase = o.cyclic ? a.offset : (o.birth + a.offset) % period;
      fast_uses_[phase].push_back(FastUse{o.tag, po.bytes});
    }
  }

  for (uint32_t k = 0; k < period; ++k) {
    for (const Move& m : plan.events[k]) {
      const int64_t i = index.find(m.tag);
      if (i < 0) {
        *error = "the plan moves an object the profile does not have (event " + std::to_string(k) + ")";
        return false;
      }
      const ObjectView& o = index.object(static_cast<uint32_t>(i));
      PlannedMove pm{m.tag, m.kind};
      migrated_bytes_ += extent_of(o.size);
      if (m.kind == MoveKind::kPrefetch) {
        // The first access at or after the issue event, within the object's lifetime (cyclic objects wrap
        // into the next step).
        const uint32_t issue_off = index.offset_of(o, k);
        const uint32_t life = o.cyclic ? period : o.life;
        for (uint32_t pass = 0; pass < (o.cyclic ? 2u : 1u) && pm.need_phase == PlannedMove::kNoUse; ++pass) {
          for (const AccessView& a : o.accesses) {
            if (a.offset >= life || (pass == 0 && a.offset < issue_off)) continue;
            const uint64_t issue_abs = o.cyclic ? k : uint64_t{o.birth} + issue_off;
            const uint64_t need_abs = o.cyclic ? uint64_t{a.offset} + pass * period : uint64_t{o.birth} + a.offset;
            pm.need_phase = static_cast<uint32_t>(need_abs % period);
            pm.need_step_offset = static_cast<uint32_t>(need_abs / period - issue_abs / period);
            break;
          }
        }
      }
      moves_[k].push_back(pm);
    }
  }
  return true;
}

const PlannedObject* CompiledPlan::object(uint64_t tag) const {
  auto it = objects_.find(tag);
  return it == objects_.end() ? nullptr : &it->second;
}

}  // namespace sentinel::manage
