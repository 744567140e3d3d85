#include "core/budget_spec.h"

#include <gtest/gtest.h>

namespace sentinel {
namespace {

constexpr uint64_t K = 1024;
constexpr uint64_t M = 1024 * K;

BudgetSpec parse_ok(const char* text) {
  BudgetSpec s;
  EXPECT_TRUE(parse_budget_spec(text, &s)) << text;
  return s;
}

TEST(BudgetSpec, BytesPercentAndUnlimited) {
  BudgetSpec s = parse_ok("512M");
  EXPECT_EQ(s.kind, BudgetKind::kBytes);
  EXPECT_EQ(s.bytes, 512 * M);
  s = parse_ok("4G");
  EXPECT_EQ(s.bytes, 4096 * M);
  s = parse_ok("0");
  EXPECT_EQ(s.kind, BudgetKind::kBytes);
  EXPECT_EQ(s.bytes, 0u);
  s = parse_ok("20%");
  EXPECT_EQ(s.kind, BudgetKind::kPercent);
  EXPECT_EQ(s.percent_ppm, 200000u);
  s = parse_ok("12.5%");
  EXPECT_EQ(s.percent_ppm, 125000u);
  s = parse_ok("100%");
  EXPECT_EQ(s.percent_ppm, 1000000u);
  EXPECT_EQ(parse_ok("").kind, BudgetKind::kUnlimited);
  EXPECT_EQ(parse_ok(nullptr).kind, BudgetKind::kUnlimited);
}

TEST(BudgetSpec, RejectsJunk) {
  for (const char* bad : {"abc", "101%", "0%", "-5", "5X", "%", "1.%", "12M%"}) {
    BudgetSpec s;
    EXPECT_FALSE(parse_budget_spec(bad, &s)) << bad;
  }
}

// The placer accounts by extent bytes: they must be exactly what the heap hands out.
}  // namespace
}  // namespace sentinel
