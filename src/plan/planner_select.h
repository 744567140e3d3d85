// Internal to the planner: selection of the windows (planner_windows.h) that are served from fast
// memory, within the budget at every phase of the step clock. Steps (docs/planner.md, "Algorithm"):
// the short-lived reserve, the greedy by density, the exchange pass, and "holding beats moving".
//
// Invariant: every selected window's occupancy (start .. occ_end on the object's clock) is in the
// occupancy tree exactly once, and the tree's maximum never exceeds the budget.
//
// Thread safety: pure functions of their arguments (one owner of the tree).
#pragma once

#include <cstdint>
#include <vector>

#include "plan/occupancy_tree.h"
#include "plan/planner.h"
#include "plan/planner_windows.h"

namespace sentinel::plan_detail {

uint32_t occ_len(const Window& w, uint32_t period);

// Selects windows (sets Window::selected, may move a prefetch earlier or make a window born fast)
// and adds their occupancy to *tree. `held_objects` (object indices, in order) are held fast for their
// whole lifetime first, where they fit: a static placement the rest of the selection adds moves to.
void select_windows(const ProfileIndex& index, const MemorySystem& mem, const PlannerConfig& cfg,
                    uint64_t budget, std::vector<Window>* win, OccupancyTree* tree,
                    const std::vector<uint32_t>& held_objects = {});

// Keeps objects fast for their whole lifetime where the budget allows, cheapest first.
void upgrade_holds(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, std::vector<Window>* win,
                   OccupancyTree* tree);

}  // namespace sentinel::plan_detail
