// The emulated PMU's ABI: how a guest process and the slow-tier QEMU plugin (tools/qemu-slowtier,
// docs/slow-tier-emulator.md "The plugin as a PMU") agree on a sample ring. Shared, header-only, by
// the guest side (src/sampler/emulated_pmu.*) and the plugin (tools/qemu-slowtier/pmu_registry.*).
//
// The ring is a perf ring: a first page laid out as struct perf_event_mmap_page (data_head,
// data_tail, data_offset, data_size) followed by data_pages pages of PERF_RECORD_SAMPLE and
// PERF_RECORD_LOST records, so that the RingReader that decodes the kernel's rings decodes it. The
// requests travel in EmulatedPmuControl, which lives in the first page's reserved area (the kernel
// leaves bytes 96..1023 of perf_event_mmap_page unused; the plugin, not the kernel, owns this page).
//
// A request is the mailbox protocol's marked store (src/os/slowtier_mailbox.h: the 9-byte NOP
// that spells "SNTL", immediately followed by one 8-byte store): the process fills the control
// block, then stores a fresh number into request_seq with the marker before it. Inside that store's
// callback the plugin learns the page's RAM address, checks kControlCookie, acts and finally writes
// response_seq = request_seq. Without the plugin the marker is a NOP and response_seq never matches.
//
// Requests (op):
//   kProbe       answers only (is a plugin there, which ABI).
//   kRegister    sample_type, sample_period, data_pages and the address ranges to sample; the plugin
//                answers status and a token, and from then on turns every sample_period-th cache-model
//                miss or write-back whose virtual address lies in a range into a sample record, while
//                step_clock is not 0. The process sets step_clock from its allocation path: so it can
//                open and close sampling exactly at an event of its own, whenever it registered.
//   kPrepare     the plugin freezes the records it will publish next: publish_head (ring offset)
//                and publish_bytes. The process then marks every data page that covers
//                [publish_head, publish_head + publish_bytes): a marked store of `token` into the
//                page, at the first free byte of it, so the plugin learns where the page is now.
//   kPublish     the plugin copies the frozen records into the pages marked since the prepare,
//                then stores data_head (release). status kMissingPages: a page was not marked;
//                nothing was written and the records stay frozen for the next prepare.
//   kUnregister  the plugin forgets the registration.
// The plugin writes guest memory only inside a request's store callback and only into pages the
// process has stored to since kPrepare: a page the kernel moved in between is never written at its
// old place (docs/slow-tier-emulator.md explains why).
//
// Sample records: the fields of `sample_type` that the plugin can fill, in the kernel's order
// (kEmulatedSampleTypes). TIME is the vCPU's virtual clock (ns, docs/slow-tier-emulator.md), CPU the
// vCPU, ADDR the access's virtual address (a write-back: the address of the store that last dirtied
// the line), STREAM_ID the value of step_clock when the access happened, PERIOD the sample period,
// WEIGHT the node's latency in ns, DATA_SRC the kind and node (below). IP, PID and TID are 0: QEMU 7.2
// plugins see neither registers nor processes.
//
// Thread safety: constants and plain structs.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>

namespace sentinel::emulated_pmu {

inline constexpr char kControlCookie[16] = {'S', 'N', 'T', 'L', '-', 'P', 'M', 'U',
                                            '-', 'R', 'I', 'N', 'G', '-', 'v', '1'};
inline constexpr uint32_t kAbi = 1;
inline constexpr uint64_t kPageBytes = 4096;
inline constexpr uint64_t kControlOffset = 128;  // inside perf_event_mmap_page's __reserved
inline constexpr uint32_t kMaxRanges = 8;
inline constexpr uint32_t kMaxDataPages = 1u << 16;  // 256 MiB of records
inline constexpr uint64_t kUserAddressLimit = uint64_t{1} << 47;  // x86-64 user space

enum Op : uint32_t { kProbe = 1, kRegister = 2, kPrepare = 3, kPublish = 4, kUnregister = 5 };
enum Status : int32_t {
  kOk = 0,
  kBadRequest = 1,     // a field out of range (sample_type the plugin cannot fill, no ranges, ...)
  kUnknownToken = 2,   // no registration with this token (the plugin forgot it, or never knew it)
  kMissingPages = 3,   // kPublish: a page of the frozen range was not marked since kPrepare
};

struct AddressRange {
  uint64_t start = 0, end = 0;  // [start, end), user addresses
};

struct EmulatedPmuControl {
  char cookie[16];          // kControlCookie, written by the process
  uint64_t request_seq;     // the marked store
  uint64_t response_seq;    // written last by the plugin
  uint32_t abi;             // the process: kAbi it speaks; the plugin: kAbi it speaks
  uint32_t op;              // Op
  int32_t status;           // Status, written by the plugin
  uint32_t data_pages;      // kRegister: pages of records after the first page (a power of two)
  uint64_t sample_type;     // kRegister: PERF_SAMPLE_* fields wanted (within kEmulatedSampleTypes)
  uint64_t sample_period;   // kRegister: every Nth event in the ranges becomes a sample (N >= 1)
  uint64_t token;           // the plugin's answer to kRegister; the process sends it with every request
  uint64_t step_clock;      // written by the process: its clock, copied into STREAM_ID; 0 = not sampling now
  uint64_t publish_head;    // kPrepare's answer: ring offset (like data_head) of the frozen records
  uint64_t publish_bytes;   // kPrepare's answer: how many bytes kPublish will write
  uint32_t n_ranges;        // kRegister
  uint32_t reserved;
  AddressRange ranges[kMaxRanges];
  // The plugin's counts for this registration, refreshed at every answer.
  uint64_t events_in_ranges;  // misses and write-backs inside the ranges while step_clock was not 0
  uint64_t samples_queued;    // records made (every sample_period-th event)
  uint64_t samples_dropped;   // records lost because the queue was full (reported as PERF_RECORD_LOST)
  uint64_t stale_clock;       // events lost because step_clock could not be read (the first page had moved)
};
static_assert(offsetof(EmulatedPmuControl, request_seq) == 16);
static_assert(kControlOffset + sizeof(EmulatedPmuControl) <= 1024);
static_assert(kControlOffset >= 96);  // after the fields of perf_event_mmap_page that precede __reserved

// What the plugin can fill (see the header comment); every field is 8 bytes, so records have a fixed
// size: 8 (header) + 8 per field.
inline constexpr uint64_t kEmulatedSampleTypes = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                                 PERF_SAMPLE_ADDR | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                                                 PERF_SAMPLE_PERIOD | PERF_SAMPLE_WEIGHT |
                                                 PERF_SAMPLE_DATA_SRC;
// What Sentinel's profiler asks for: 48-byte records.
inline constexpr uint64_t kProfilerSampleType = PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_STREAM_ID |
                                                PERF_SAMPLE_CPU | PERF_SAMPLE_DATA_SRC;

// DATA_SRC of an emulated sample. A load miss: PERF_MEM_OP_LOAD; a store miss (the read for
// ownership of a write-allocate cache): PERF_MEM_OP_STORE; a write-back of a dirty line, which no
// real PMU reports: PERF_MEM_OP_NA with kDataSrcWriteback, a bit of mem_rsvd (the kernel leaves
// those 0). The level is RAM (PERF_MEM_LVL_HIT | LOC_RAM, LVLNUM_RAM) for node 0; node 1, the slow
// tier, is REM_RAM1 with mem_remote set and one hop.
inline constexpr uint64_t kDataSrcWriteback = uint64_t{1} << 63;

enum class EventKind : int { kLoadMiss = 0, kStoreMiss = 1, kWriteback = 2 };

inline uint64_t data_src_of(EventKind kind, int node) {
  uint64_t op = kind == EventKind::kLoadMiss ? PERF_MEM_OP_LOAD
                : kind == EventKind::kStoreMiss ? PERF_MEM_OP_STORE
                                                : PERF_MEM_OP_NA;
  uint64_t v = op << PERF_MEM_OP_SHIFT;
  if (node == 0) {
    v |= uint64_t{PERF_MEM_LVL_HIT | PERF_MEM_LVL_LOC_RAM} << PERF_MEM_LVL_SHIFT;
    v |= uint64_t{PERF_MEM_LVLNUM_RAM} << PERF_MEM_LVLNUM_SHIFT;
  } else {
    v |= uint64_t{PERF_MEM_LVL_HIT | PERF_MEM_LVL_REM_RAM1} << PERF_MEM_LVL_SHIFT;
    v |= uint64_t{PERF_MEM_LVLNUM_RAM} << PERF_MEM_LVLNUM_SHIFT;
    v |= uint64_t{PERF_MEM_REMOTE_REMOTE} << PERF_MEM_REMOTE_SHIFT;
    v |= uint64_t{PERF_MEM_HOPS_1} << PERF_MEM_HOPS_SHIFT;
  }
  if (kind == EventKind::kWriteback) v |= kDataSrcWriteback;
  return v;
}

// The node a DATA_SRC names: 1 when mem_remote is set, else 0.
inline int node_of_data_src(uint64_t data_src) {
  return ((data_src >> PERF_MEM_REMOTE_SHIFT) & PERF_MEM_REMOTE_REMOTE) != 0 ? 1 : 0;
}

}  // namespace sentinel::emulated_pmu
