// choose_sampler (declared in pmu_sampler.h): which sampler this process can use, and why.
#include <string>

#include "sampler/pmu_sampler.h"

namespace sentinel {
namespace {

// Probes one PMU kind; appends "<kind> unavailable: <reason>" to *why on failure.
bool try_kind(SamplerKind kind, const PmuSamplerOptions& base, const PerfOs& os, std::string* why) {
  PmuSamplerOptions opt = base;
  opt.kind = kind;
  PmuSampler probe(os);
  const ProbeResult r = probe.probe(opt);
  if (r.ok) return true;
  if (!why->empty()) *why += "; ";
  *why += std::string(sampler_kind_name(kind)) + " unavailable: " + r.reason;
  return false;
}

}  // namespace

SamplerChoice choose_sampler(const std::string& requested, const PmuSamplerOptions& base, const PerfOs& os) {
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
  std::string why;
  if (requested == "pebs" || requested == "ibs") {
    const SamplerKind kind = requested == "pebs" ? SamplerKind::kPebs : SamplerKind::kIbs;
    if (try_kind(kind, base, os, &why)) {
      c.kind = kind;
      c.reason = requested + " requested and available";
    } else {
      c.kind = SamplerKind::kSoftware;
      c.reason = why + "; falling back to the software sampler";
    }
    return c;
  }
  if (requested != "auto" && !requested.empty()) {
    c.kind = SamplerKind::kNone;
    c.reason = "unknown sampler \"" + requested + "\" (auto, pebs, ibs, software, none)";
    return c;
  }
  for (SamplerKind kind : {SamplerKind::kPebs, SamplerKind::kIbs}) {
    if (try_kind(kind, base, os, &why)) {
      c.kind = kind;
      c.reason = why.empty() ? std::string(sampler_kind_name(kind)) + " available"
                             : why + "; " + sampler_kind_name(kind) + " available";
      return c;
    }
  }
  c.kind = SamplerKind::kSoftware;
  c.reason = why + "; using the software sampler";
  return c;
}

}  // namespace sentinel
