// Small hand-built profiles with known answers, shared by the plan tests.
#pragma once

#include <cstdint>
#include <vector>

#include "profile/profile.h"

namespace sentinel::test {

// Adds a non-persistent object alive in phases [birth, death] with `accesses` reads in each listed phase.
ObjectProfile object(uint64_t tag, uint64_t size, uint32_t birth, uint32_t death,
                     const std::vector<uint32_t>& use_phases, uint64_t accesses = 100000);
ObjectProfile persistent(uint64_t tag, uint64_t size, uint32_t period,
                         const std::vector<uint32_t>& use_phases, uint64_t accesses = 100000);
// A profile of `period` phases of `phase_ns` each; peak computed from the objects.
StepProfile make_profile(uint32_t period, uint64_t phase_ns, std::vector<ObjectProfile> objects);

}  // namespace sentinel::test
