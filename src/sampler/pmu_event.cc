// The only translation unit that includes libpfm4's perf headers (see pmu_event.h).
#include "sampler/pmu_event.h"

#include <perfmon/pfmlib_perf_event.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sentinel {
namespace {

std::mutex g_pfm_mutex;
bool g_pfm_tried = false;
int g_pfm_status = PFM_SUCCESS;

}  // namespace

std::string default_pebs_event(bool load_latency, uint32_t ldlat) {
  if (load_latency) return "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=" + std::to_string(ldlat);
  return "MEM_LOAD_RETIRED:L3_MISS";
}

bool encode_pmu_event(const std::string& name, PmuEventEncoding* out, std::string* error) {
  std::lock_guard<std::mutex> lock(g_pfm_mutex);
  auto fail = [&](const char* what) {
    if (error != nullptr) *error = name + ": " + what;
    return false;
  };
  if (!g_pfm_tried) {
    g_pfm_tried = true;
    g_pfm_status = pfm_initialize();
  }
  if (g_pfm_status != PFM_SUCCESS) return fail(pfm_strerror(g_pfm_status));
  struct perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  char* fstr = nullptr;
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.fstr = &fstr;
  arg.size = sizeof arg;
  const int ret = pfm_get_os_event_encoding(name.c_str(), PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
  if (ret != PFM_SUCCESS) {
    std::free(fstr);
    return fail(pfm_strerror(ret));
  }
  PmuEventEncoding e;
  e.type = attr.type;
  e.config = attr.config;
  e.config1 = attr.config1;
  e.config2 = attr.config2;
  e.exclude_kernel = attr.exclude_kernel != 0;
  e.exclude_hv = attr.exclude_hv != 0;
  if (fstr != nullptr) e.fstr = fstr;
  std::free(fstr);
  *out = e;
  return true;
}

}  // namespace sentinel
