#include "core/text_buf.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace sentinel {
namespace {

TEST(TextBuf, FormatsNumbersAndText) {
  char storage[64];
  TextBuf t(storage, sizeof storage);
  t.put("n=").put(uint64_t{0}).put(" ").put_signed(-42).put(" ").put_hex(0xbeef);
  EXPECT_STREQ(t.c_str(), "n=0 -42 0xbeef");
  EXPECT_EQ(t.size(), std::strlen("n=0 -42 0xbeef"));
  EXPECT_FALSE(t.truncated());
  t.put_signed(INT64_MIN);
  EXPECT_STREQ(t.c_str(), "n=0 -42 0xbeef-9223372036854775808");
}

TEST(TextBuf, DropsWhatDoesNotFitAndSaysSo) {
  char storage[6];
  TextBuf t(storage, sizeof storage);
  t.put("abcde");
  EXPECT_FALSE(t.truncated());  // exactly full: five bytes and the NUL
  t.put_char('f');
  EXPECT_TRUE(t.truncated());
  EXPECT_STREQ(t.c_str(), "abcde");
  t.clear();
  EXPECT_FALSE(t.truncated());
  t.put(uint64_t{1234567});
  EXPECT_TRUE(t.truncated());
  EXPECT_STREQ(t.c_str(), "12345");
  char none[1] = {'x'};
  TextBuf empty(none, 0);  // no room at all: the storage is left alone
  empty.put("a");
  EXPECT_TRUE(empty.truncated());
  EXPECT_EQ(none[0], 'x');
}

TEST(TextBuf, ContinuesTextAlreadyInTheStorage) {
  char storage[16] = "path";
  TextBuf t = TextBuf::continuing(storage, sizeof storage);
  EXPECT_EQ(t.size(), 4u);
  t.put(".r").put(uint64_t{3});
  EXPECT_STREQ(storage, "path.r3");
  EXPECT_FALSE(t.truncated());
  t.put("-and-much-more");
  EXPECT_TRUE(t.truncated());
  EXPECT_EQ(std::strlen(storage), 15u);
  // Storage without a NUL in its capacity is cut, not overrun.
  char unterminated[4] = {'a', 'b', 'c', 'd'};
  TextBuf u = TextBuf::continuing(unterminated, sizeof unterminated);
  EXPECT_TRUE(u.truncated());
  EXPECT_STREQ(u.c_str(), "abc");
}

}  // namespace
}  // namespace sentinel
