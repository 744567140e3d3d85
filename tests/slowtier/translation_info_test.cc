#include "translation_info.h"

#include <gtest/gtest.h>

#include <vector>

namespace sentinel::slowtier {
namespace {

uint32_t bytes_of(std::vector<uint8_t> code) { return rep_string_element_bytes(code.data(), code.size()); }

TEST(TranslationInfo, RepMovsAndStosElementSizes) {
  EXPECT_EQ(bytes_of({0xf3, 0xa4}), 1u);              // rep movsb
  EXPECT_EQ(bytes_of({0xf3, 0x48, 0xa5}), 8u);        // rep movsq (the kernel's copy_page)
  EXPECT_EQ(bytes_of({0xf3, 0xa5}), 4u);              // rep movsd
  EXPECT_EQ(bytes_of({0x66, 0xf3, 0xa5}), 2u);        // rep movsw
  EXPECT_EQ(bytes_of({0xf3, 0xaa}), 1u);              // rep stosb (clear_page_erms, memset)
  EXPECT_EQ(bytes_of({0xf3, 0x48, 0xab}), 8u);        // rep stosq
  EXPECT_EQ(bytes_of({0x64, 0xf3, 0x67, 0xa4}), 1u);  // segment and address-size prefixes
}

TEST(TranslationInfo, OtherInstructionsAreNotStrings) {
  EXPECT_EQ(bytes_of({0xa4}), 0u);              // movsb without rep: one element, an instruction
  EXPECT_EQ(bytes_of({0xf3, 0xa6}), 0u);        // repe cmpsb
  EXPECT_EQ(bytes_of({0xf3, 0xae}), 0u);        // repe scasb
  EXPECT_EQ(bytes_of({0xf3, 0x90}), 0u);        // pause
  EXPECT_EQ(bytes_of({0xf3, 0x0f, 0xb8, 0xc0}), 0u);  // popcnt
  EXPECT_EQ(bytes_of({0xf3, 0xa4, 0x90}), 0u);  // not the whole instruction
  EXPECT_EQ(bytes_of({}), 0u);
}

TEST(TranslationInfo, KernelHalf) {
  EXPECT_TRUE(is_kernel_address(0xffffffff81000000ull));
  EXPECT_TRUE(is_kernel_address(0xff11000000000000ull));  // la57 direct map
  EXPECT_FALSE(is_kernel_address(0x00007fffffffe000ull));
}

TEST(TranslationInfo, PackedWordsRoundTrip) {
  const BlockInfo b{512, true, 8};
  const BlockInfo u = BlockInfo::unpack(b.pack());
  EXPECT_EQ(u.instructions, 512u);
  EXPECT_TRUE(u.kernel);
  EXPECT_EQ(u.string_element_bytes, 8u);

  const AccessInfo a = AccessInfo::unpack(AccessInfo{true, false, true}.pack());
  EXPECT_TRUE(a.mailbox_store);
  EXPECT_FALSE(a.kernel);
  EXPECT_TRUE(a.string_op);
  EXPECT_EQ(AccessInfo{}.pack(), 0u);  // a plain access is the null pointer, as before
}

}  // namespace
}  // namespace sentinel::slowtier
