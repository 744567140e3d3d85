#include "core/budget_spec.h"

#include "core/env.h"

namespace sentinel {

bool parse_budget_spec(const char* text, BudgetSpec* out) noexcept {
  if (text == nullptr || *text == '\0') {
    *out = BudgetSpec{};
    return true;
  }
  uint64_t bytes = 0;
  double percent = 0.0;
  if (!parse_bytes_or_percent(text, &bytes, &percent)) return false;
  BudgetSpec spec;
  if (percent > 0.0) {
    spec.kind = BudgetKind::kPercent;
    // Rounded to parts per million, at least 1: "0.00001%" is still a (tiny) positive budget.
    const double ppm = percent * 10000.0 + 0.5;
    spec.percent_ppm = ppm < 1.0 ? 1 : (ppm > 1e6 ? 1000000u : static_cast<uint32_t>(ppm));
  } else {
    spec.kind = BudgetKind::kBytes;
    spec.bytes = bytes;
  }
  *out = spec;
  return true;
}

}  // namespace sentinel
