#include "migrate/channel_fit.h"

namespace sentinel::migrate {

ChannelFit fit_channel(const ChannelTotals& t, double min_moves) {
  ChannelFit f;
  if (t.moves < min_moves || t.kib < 1024.0 || t.ns <= 0) return f;
  const double n = t.moves;
  const double sxx = t.kib2 - t.kib * t.kib / n;
  const double sxy = t.kib_ns - t.kib * t.ns / n;
  // Sizes must differ by more than rounding: a relative spread of 1e-6 of the mean square.
  if (!(sxx > 1e-6 * t.kib2)) return f;
  double slope = sxy / sxx;                   // ns per KiB
  double setup = (t.ns - slope * t.kib) / n;  // ns
  if (setup < 0) {
    setup = 0;
    slope = t.kib_ns / t.kib2;  // through the origin
  }
  if (!(slope > 0)) return f;
  f.valid = true;
  f.setup_ns = setup;
  f.bw_gbps = 1024.0 / slope;
  return f;
}

double channel_slowdown(const ChannelTotals& t, double setup_ns, double bw_gbps) {
  if (t.moves <= 0 || bw_gbps <= 0) return 0;
  const double predicted = t.moves * setup_ns + t.kib * 1024.0 / bw_gbps;
  return predicted > 0 ? t.ns / predicted : 0;
}

}  // namespace sentinel::migrate
