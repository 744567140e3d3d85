#include "translation_info.h"

namespace sentinel::slowtier {

uint32_t rep_string_element_bytes(const uint8_t* code, size_t size) {
  bool rep = false;
  bool operand16 = false;
  bool rex_w = false;
  size_t i = 0;
  // Legacy prefixes in any order, then at most one REX prefix right before the opcode.
  for (; i < size; ++i) {
    const uint8_t b = code[i];
    if (b == 0xf3 || b == 0xf2) {
      rep = true;
    } else if (b == 0x66) {
      operand16 = true;
    } else if (b == 0x67 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65) {
      // address size and segment overrides change nothing about the element size
    } else {
      break;
    }
  }
  if (i < size && (code[i] & 0xf0) == 0x40) {
    rex_w = (code[i] & 0x08) != 0;
    ++i;
  }
  if (!rep || i + 1 != size) return 0;
  switch (code[i]) {
    case 0xa4:  // movsb
    case 0xaa:  // stosb
      return 1;
    case 0xa5:  // movsw/d/q
    case 0xab:  // stosw/d/q
      return rex_w ? 8 : operand16 ? 2 : 4;
    default:
      return 0;
  }
}

}  // namespace sentinel::slowtier
