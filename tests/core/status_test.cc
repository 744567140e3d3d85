#include "core/status.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace sentinel {
namespace {

TEST(Status, DefaultIsOkWithNoMessage) {
  const Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_STREQ(s.message(), "");
  EXPECT_EQ(s.sys_errno(), 0);
  EXPECT_TRUE(Status::ok().is_ok());
}

TEST(Status, AFailureCarriesItsStaticTextAndErrno) {
  static const char kText[] = "cannot open the ledger file";
  const Status s = Status::error(kText, ENOENT);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), kText);  // the text itself, not a copy: no allocation, no buffer
  EXPECT_EQ(s.static_text(), kText);
  EXPECT_EQ(s.sys_errno(), ENOENT);
  EXPECT_FALSE(Status::error(nullptr).is_ok());
  EXPECT_STREQ(Status::error(nullptr).message(), "");
}

TEST(Status, AppendedTextFollowsTheStaticTextInACopyThatSurvivesCopying) {
  Status s = Status::error("SENTINEL_X: ");
  s.append("'abc' is not ").append(42ull);
  EXPECT_STREQ(s.message(), "SENTINEL_X: 'abc' is not 42");
  EXPECT_STREQ(s.static_text(), "SENTINEL_X: ");
  const Status copy = s;
  s.append(" (changed)");
  EXPECT_STREQ(copy.message(), "SENTINEL_X: 'abc' is not 42");
  EXPECT_FALSE(copy.truncated());
}

TEST(Status, TextPastTheCapacityIsCutAndSaysSo) {
  const std::string longer(Status::kCapacity * 2, 'x');
  Status s = Status::error("head ");
  s.append(longer.c_str());
  EXPECT_TRUE(s.truncated());
  EXPECT_EQ(std::strlen(s.message()), Status::kCapacity - 1);
  EXPECT_EQ(std::string(s.message()).substr(0, 5), "head ");
}

TEST(Status, AppendingToOkChangesNothing) {
  Status s;
  s.append("ignored");
  EXPECT_TRUE(s.is_ok());
  EXPECT_STREQ(s.message(), "");
}

}  // namespace
}  // namespace sentinel
