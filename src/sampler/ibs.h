// AMD Instruction-Based Sampling (IBS) op sampling through the kernel's "ibs_op" PMU.
//
// Detection reads <sysfs_root>/ibs_op/type (sysfs_root defaults to /sys/bus/event_source/devices and
// is a parameter so tests can fake it). The data address of a sample: kernels from 6.2 fill
// PERF_SAMPLE_ADDR for ibs_op; older kernels only deliver the IBS registers in PERF_SAMPLE_RAW, so the
// sampler requests RAW too and ibs_raw_access() reads the linear address from it. The RAW layout
// (u32 caps, then the u64 registers IbsOpCtl, IbsOpRip, IbsOpData, IbsOpData2, IbsOpData3,
// IbsDcLinAd, ...) and the IbsOpData3 bits (0: load, 1: store, 17: linear address valid) follow the
// kernel's arch/x86/events/amd/ibs.c and AMD's PPR; they could not be checked on hardware here.
//
// Thread safety: plain functions, no shared state.
#pragma once

#include <cstdint>
#include <string>

namespace sentinel {

inline constexpr const char* kDefaultSysfsPmuRoot = "/sys/bus/event_source/devices";

// Reads the ibs_op PMU type. On failure returns false with *err an errno (ENOENT: no ibs_op PMU,
// EINVAL: unreadable content) and *reason a message naming the path.
bool read_ibs_op_type(const std::string& sysfs_root, uint32_t* type, int* err, std::string* reason);

// IBS op periods are in units of 16 ops (the low 4 bits of the max count do not exist); rounds up to
// a multiple of 16, at least 16.
uint64_t ibs_op_period(uint64_t requested);

// Decodes a PERF_SAMPLE_RAW payload of an ibs_op sample. Returns false if it is too short or the
// linear address is not valid; otherwise sets *addr and *is_write (-1 unknown, 0 load, 1 store).
bool ibs_raw_access(const uint8_t* raw, uint32_t raw_size, uint64_t* addr, int* is_write);

}  // namespace sentinel
