// What one migration channel really costs, learned from the moves it made: a move of b bytes takes
// setup_ns + b / bw_gbps. Two numbers because on small objects the fixed part (the move_pages call's
// setup, the policy update) sets the rate and on large ones the bandwidth does: a channel measured as
// one average rate from a step of 40 KiB moves (the emulator: 0.3 GB/s) makes every 4 MiB move look
// six times dearer than it is.
//
// ChannelSums is filled by one thread (the engine's, after each completed move) and read by others:
// each field is a relaxed atomic, a reader may see a move half added (it changes the fit by one move).
// fit_channel is a pure function.
#pragma once

#include <atomic>
#include <cstdint>

namespace sentinel::migrate {

struct ChannelTotals {
  double moves = 0;      // completed moves
  double kib = 0;        // KiB moved, summed
  double ns = 0;         // ns the moves took, summed
  double kib2 = 0;       // sum of KiB^2
  double kib_ns = 0;     // sum of KiB * ns
};

class ChannelSums {
 public:
  // Engine thread only.
  void add(uint64_t bytes, uint64_t ns) {
    const double x = static_cast<double>(bytes) / 1024.0, y = static_cast<double>(ns);
    bump(moves_, 1.0);
    bump(kib_, x);
    bump(ns_, y);
    bump(kib2_, x * x);
    bump(kib_ns_, x * y);
  }
  ChannelTotals totals() const {
    auto l = [](const std::atomic<double>& a) { return a.load(std::memory_order_relaxed); };
    return ChannelTotals{l(moves_), l(kib_), l(ns_), l(kib2_), l(kib_ns_)};
  }

 private:
  static void bump(std::atomic<double>& a, double v) {
    a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);  // one writer
  }
  std::atomic<double> moves_{0}, kib_{0}, ns_{0}, kib2_{0}, kib_ns_{0};
};

struct ChannelFit {
  bool valid = false;     // enough moves of enough different sizes to tell the two parts apart
  double setup_ns = 0;    // >= 0
  double bw_gbps = 0;     // bytes per ns, > 0
};

// Least squares of ns against bytes over the moves. Valid when there are at least `min_moves` moves,
// at least one MiB in all, and their sizes spread (the fit's slope is positive); a fitted negative
// setup is clamped to 0 with the bandwidth refitted through the origin.
ChannelFit fit_channel(const ChannelTotals& t, double min_moves = 8);

// The time the moves took against what a model (setup_ns, bw_gbps) predicts for the same moves: > 1
// means the channel is slower than the model. 0 when there are no moves.
double channel_slowdown(const ChannelTotals& t, double setup_ns, double bw_gbps);

}  // namespace sentinel::migrate
