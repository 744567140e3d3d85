// The fast-memory budget grammar, one for the runtime (SENTINEL_FAST_BUDGET) and the offline tools
// (`sentinel replay --budget`): a byte count with an optional K/M/G/T suffix (powers of 1024, e.g. "512M",
// "0"), or a percentage of the peak object bytes in (0, 100] ("20%", "12.5%").
//
// Never allocates (the runtime parses it from its library constructor, before its own allocator is ready).
#pragma once

#include <cstdint>

namespace sentinel {

enum class BudgetKind : uint8_t { kUnlimited, kBytes, kPercent };

struct BudgetSpec {
  BudgetKind kind = BudgetKind::kUnlimited;
  uint64_t bytes = 0;        // kBytes
  uint32_t percent_ppm = 0;  // kPercent: parts per million of the peak, 1..1'000'000
  double fraction() const { return percent_ppm / 1e6; }
};

// What parse_budget_spec accepts, for messages.
inline constexpr const char* kBudgetGrammar =
    "a byte count with optional K/M/G/T suffix (e.g. 512M) or a percentage of the peak object bytes in "
    "(0, 100] (e.g. 20%)";

// nullptr or "" -> unlimited. False for anything else that is not in the grammar.
bool parse_budget_spec(const char* text, BudgetSpec* out) noexcept;

}  // namespace sentinel
