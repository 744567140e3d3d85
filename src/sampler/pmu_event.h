// Encoding of a named hardware event into perf_event_attr fields with libpfm4
// (pfm_get_os_event_encoding, PFM_OS_PERF_EVENT_EXT, user-level only).
//
// The encoding is returned as plain fields, not as a perf_event_attr: pmu_event.cc is the only file
// that includes libpfm4's perf headers, which ship their own copy of the kernel's perf_event.h and
// collide with <linux/perf_event.h> used everywhere else.
//
// libpfm4 reads LIBPFM_FORCE_PMU (e.g. "skl") when it initializes: with it, Intel events encode on
// any host, which is how the tests check encodings on an AMD VM. libpfm4 initializes once per process
// (the first call here), so the variable must be set before that.
//
// Thread safety: encode_pmu_event serializes libpfm4 calls with an internal mutex.
#pragma once

#include <cstdint>
#include <string>

namespace sentinel {

struct PmuEventEncoding {
  uint32_t type = 0;  // perf_event_attr.type (e.g. PERF_TYPE_RAW = 4)
  uint64_t config = 0, config1 = 0, config2 = 0;
  bool exclude_kernel = false, exclude_hv = false;
  std::string fstr;   // libpfm4's fully qualified event string, for logs
};

// Default PEBS events. load_latency selects MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=N (loads slower than
// N cycles, with latency in the sample weight); otherwise MEM_LOAD_RETIRED:L3_MISS.
std::string default_pebs_event(bool load_latency, uint32_t ldlat);

// Encodes `name` (libpfm4 syntax, e.g. "MEM_LOAD_RETIRED:L3_MISS"). On failure returns false and sets
// *error to "<name>: <libpfm4 message>" (e.g. "event not found" for Intel events on AMD).
bool encode_pmu_event(const std::string& name, PmuEventEncoding* out, std::string* error);

}  // namespace sentinel
