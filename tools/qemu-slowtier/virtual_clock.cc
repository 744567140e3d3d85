#include "virtual_clock.h"

#include <algorithm>

namespace sentinel::slowtier {

double epoch_ns(const EpochCounts& c, const ClockParams& p) {
  double compute = c.cycles / p.freq_ghz;
  double latency = 0;
  double transfer = 0;
  for (int n = 0; n < 2; ++n) {
    const NodeTiming& t = p.node[n];
    latency += static_cast<double>(c.misses[n] - c.streamed[n]) * t.latency_ns / p.mlp;
    double bytes_in = static_cast<double>(c.misses[n]) * p.line_bytes;
    double bytes_out = static_cast<double>(c.writebacks[n]) * p.line_bytes;
    transfer = std::max(transfer, bytes_in / t.read_bw_gbps + bytes_out / t.write_bw_gbps);
  }
  return std::max(compute + latency, transfer);
}

void VirtualClock::close_epoch() {
  now_ += epoch_ns(open_, params_);
  open_ = EpochCounts{};
}

}  // namespace sentinel::slowtier
