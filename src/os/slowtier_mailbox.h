// The mailbox page through which a guest program reads the slow-tier plugin's counters: the ABI
// between the plugin (tools/qemu-slowtier) and the guest side, which is read_with_page() below, used
// by libsentinel_slowtier (the C API of include/sentinel/slowtier.h) and by Sentinel's own clock in
// the emulator (measure_clock.h); docs/slow-tier-emulator.md, "Reading the counters in the guest".
//
// Protocol: the guest writes kMailboxCookie at the start of a resident 4 KiB page, then executes
// kMarkerInsn immediately followed by one 8-byte store of a fresh sequence number to request_seq.
// The plugin sees the marker when it translates the code, hooks the next instruction's store, and
// inside that store's callback (on the same vCPU thread, before the guest's next instruction) finds
// the page in its own mapping of the guest RAM's backing file, checks the cookie, writes `counters`
// and then response_seq = request_seq. Without the plugin the marker is a NOP and response_seq never
// matches, so the reader knows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sentinel/slowtier.h"

namespace sentinel::slowtier {

inline constexpr char kMailboxCookie[16] = {'S', 'N', 'T', 'L', '-', 'S', 'L', 'O',
                                            'W', 'T', 'I', 'E', 'R', '-', 'v', '1'};
inline constexpr uint32_t kMailboxAbi = 2;  // 2: the counters' breakdown fields
inline constexpr uint64_t kMailboxPageBytes = 4096;

// nopw 0x4c544e53(%rax,%rax,1): a 9-byte NOP whose displacement spells "SNTL".
inline constexpr unsigned char kMarkerInsn[9] = {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x53, 0x4e, 0x54, 0x4c};

struct Mailbox {
  char cookie[16];
  uint64_t request_seq;   // the guest's marked store
  uint64_t response_seq;  // written last by the plugin
  uint32_t abi;           // kMailboxAbi, written by the plugin
  uint32_t pad;
  sentinel_slowtier_counters counters;
};
static_assert(sizeof(Mailbox) <= kMailboxPageBytes);
static_assert(offsetof(Mailbox, request_seq) == 16);

// The marked store of the protocol: kMarkerInsn immediately followed by one 8-byte store of `value`
// to `slot`. The plugin acts inside that store's callback. Shared by every request Sentinel makes of
// the plugin (read_with_page below, the emulated PMU's ring requests in sampler/emulated_pmu.h).
void marked_store(volatile uint64_t* slot, uint64_t value) noexcept;

// A request number that no earlier request of any process used: a stale answer never matches.
uint64_t fresh_request_seq() noexcept;

// One request through `page` (4096 bytes, 4096-aligned, writable): fills *out and returns true when
// the plugin answered. Makes up to `attempts` marked stores (a store that faults the page in runs
// again without its marker). No allocation, no lock, no system call: safe on the allocation path and
// in signal handlers, and from several threads as long as each uses its own page (a request whose
// page another thread overwrote in between only fails and is retried).
bool read_with_page(void* page, sentinel_slowtier_counters* out, int attempts = 4) noexcept;

}  // namespace sentinel::slowtier
