// Synthetic step profiles for tests, benchmarks and `sentinel replay synthetic`:
//
// dnn_training_profile: one training step of an N-layer fully connected network: the input batch;
// per layer persistent weights (read in forward i and backward i, updated by the optimizer), weight
// gradients (written in backward i, read by the optimizer) and optimizer state (touched once, by the
// optimizer); activations born in forward i, read by forward i+1 and by backward i, freed there;
// short-lived temporaries (workspaces, activation gradients). Phase durations follow the layer's
// FLOPs at a given compute rate, or its memory traffic at DRAM bandwidth when that takes longer.
// Accesses are cache-line misses: bytes / 64 times the passes over each tensor.
//
// random_profile: objects with random sizes, lifetimes (some wrapping the step, some persistent) and
// random access phases, for property tests.
//
// Thread safety: pure functions. Same config and seed give the same profile.
#pragma once

#include <cstdint>

#include "profile/profile.h"

namespace sentinel {

struct DnnConfig {
  uint32_t layers = 16;
  uint64_t width = 1024;         // features per layer (weights are width x width)
  uint64_t batch = 2048;         // rows of every activation
  uint64_t elem_bytes = 4;
  double gflops = 100.0;         // compute rate, FLOP per ns
  double dram_gbps = 20.0;       // single-thread streaming rate for memory-bound phases
  double gemm_passes = 2.0;      // misses per cache line of a GEMM operand
  uint32_t optimizer_states = 2; // tensors of optimizer state per weight (Adam: 2, SGD momentum: 1)
  double jitter = 0.0;           // relative random variation of sizes and durations (0..0.5)
  uint64_t seed = 1;
};

StepProfile dnn_training_profile(const DnnConfig& config);

struct RandomProfileConfig {
  uint32_t objects = 40;
  uint32_t period = 60;
  uint64_t seed = 1;
  uint64_t max_size = 64ull << 20;
  double persistent_share = 0.2;
  double short_lived_share = 0.3;
};

StepProfile random_profile(const RandomProfileConfig& config);

}  // namespace sentinel
