// What the plugin learns about guest code when QEMU translates it, packed into the userdata word of
// the execution and memory callbacks (QEMU 7.2 gives each callback one pointer-sized word, and a
// translated block can be dropped at any time, so nothing is allocated per block).
//
// - kernel: the block lies in the upper half of the address space, where x86-64 Linux keeps its
//   code; counted apart so that a page migration's kernel work can be told from the program's.
// - string elements: a rep movs/stos (x86 fast strings). TCG executes it one element per run of a
//   block that holds only that instruction; the virtual clock charges such elements by their bytes
//   (virtual_clock.h) and their stores as whole-line writes without a read-for-ownership.
//
// Thread safety: pure functions and plain values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sentinel::slowtier {

inline bool is_kernel_address(uint64_t vaddr) { return (vaddr >> 63) != 0; }

// Bytes per element of a rep/repne movs or stos instruction (1, 2, 4 or 8), or 0 for any other
// instruction (lods, cmps and scas compare or load and get no fast-string treatment).
uint32_t rep_string_element_bytes(const uint8_t* code, size_t size);


struct BlockInfo {
  uint32_t instructions = 0;          // < 2^16 (a TCG block holds at most 512)
  bool kernel = false;
  uint32_t string_element_bytes = 0;  // non-zero: the block is one rep movs/stos element

  uintptr_t pack() const {
    return uintptr_t{instructions & 0xffffu} | (uintptr_t{kernel} << 16) |
           (uintptr_t{string_element_bytes & 0xfu} << 20);
  }
  static BlockInfo unpack(uintptr_t w) {
    return BlockInfo{static_cast<uint32_t>(w & 0xffffu), ((w >> 16) & 1u) != 0,
                     static_cast<uint32_t>((w >> 20) & 0xfu)};
  }
};

struct AccessInfo {
  bool mailbox_store = false;  // the store right after the mailbox marker (os/slowtier_mailbox.h)
  bool kernel = false;
  bool string_op = false;      // an access of a rep movs/stos element

  uintptr_t pack() const {
    return uintptr_t{mailbox_store} | (uintptr_t{kernel} << 1) | (uintptr_t{string_op} << 2);
  }
  static AccessInfo unpack(uintptr_t w) { return AccessInfo{(w & 1u) != 0, (w & 2u) != 0, (w & 4u) != 0}; }
};

}  // namespace sentinel::slowtier
