// choose_sampler (declared in pmu_sampler.h): which sampler this process can use, and why.
#include <string>

#include "sampler/pmu_sampler.h"

namespace sentinel {
namespace {

// Probes one PMU kind from one source; appends "<kind> unavailable: <reason>" to *why on failure.
bool try_kind(SamplerKind kind, PmuSource source, const PmuSamplerOptions& base, const EmulatedPmuOs& emulated_os,
              std::string* why) {
  PmuSamplerOptions opt = base;
  opt.kind = kind;
  opt.source = source;
  PmuSampler probe(emulated_os);
  const Status r = probe.probe(opt);
  if (r.is_ok()) return true;
  if (!why->empty()) *why += "; ";
  *why += std::string(sampler_kind_name(kind)) +
          (source == PmuSource::kEmulated ? " from the slow-tier plugin" : "") + " unavailable: " + r.message();
  return false;
}

}  // namespace

SamplerChoice choose_sampler(const std::string& requested, const PmuSamplerOptions& base, PmuSourceSetting sources,
                             const EmulatedPmuOs& emulated_os) {
  SamplerChoice c;
  if (requested == "none") {
    c.kind = SamplerKind::kNone;
    c.reason = "sampling disabled by request";
    return c;
  }
  if (requested == "software") {
    c.kind = SamplerKind::kSoftware;
    c.reason = "software sampler requested";
    return c;
  }
  const bool perf = sources != PmuSourceSetting::kEmulated;
  std::string why;
  auto emulated_pebs = [&](const std::string& what) {
    if (!try_kind(SamplerKind::kPebs, PmuSource::kEmulated, base, emulated_os, &why)) return false;
    c.kind = SamplerKind::kPebs;
    c.source = PmuSource::kEmulated;
    c.reason = (why.empty() ? "" : why + "; ") + what + ": samples from the slow-tier QEMU plugin (emulated PEBS)";
    return true;
  };
  if (requested == "pebs" || requested == "ibs") {
    const SamplerKind kind = requested == "pebs" ? SamplerKind::kPebs : SamplerKind::kIbs;
    if (perf && try_kind(kind, PmuSource::kPerf, base, emulated_os, &why)) {
      c.kind = kind;
      c.reason = requested + " requested and available";
      return c;
    }
    if (kind == SamplerKind::kPebs && sources != PmuSourceSetting::kPerf && emulated_pebs("pebs requested")) return c;
    c.kind = SamplerKind::kSoftware;
    c.reason = why + "; falling back to the software sampler";
    return c;
  }
  if (requested != "auto" && !requested.empty()) {
    c.kind = SamplerKind::kNone;
    c.reason = "unknown sampler \"" + requested + "\" (auto, pebs, ibs, software, none)";
    return c;
  }
  if (sources == PmuSourceSetting::kEmulated) {
    if (emulated_pebs("SENTINEL_PMU_SOURCE=qemu-slowtier")) return c;
  } else {
    for (SamplerKind kind : {SamplerKind::kPebs, SamplerKind::kIbs}) {
      if (try_kind(kind, PmuSource::kPerf, base, emulated_os, &why)) {
        c.kind = kind;
        c.reason = why.empty() ? std::string(sampler_kind_name(kind)) + " available"
                               : why + "; " + sampler_kind_name(kind) + " available";
        return c;
      }
    }
  }
  c.kind = SamplerKind::kSoftware;
  c.reason = why + "; using the software sampler";
  return c;
}

}  // namespace sentinel
