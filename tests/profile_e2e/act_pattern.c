/* A training step in miniature whose activations are what a schedule would move: every step writes one
 * activation per layer in the forward pass (a fresh buffer from one call site, filled by memset right
 * after its allocation, as a kernel fills its output), then walks the layers backwards, allocating a
 * gradient buffer per layer (another call site), reading that layer's activation and writing the
 * gradient, and frees both. Before the loop it allocates a few hundred small "weights" that live
 * throughout, so that re-arming every live object at every phase boundary costs far more than a phase
 * lasts. Steps are marked with sentinel_step_begin() when the library is preloaded.
 *
 * On the step clock (event = allocation): activation l is born at event l and written in phase l; the
 * gradient of layer l is born at event 2L-1-l, and activation l is read in that phase.
 *
 *   act_pattern [--steps N] [--layers L] [--kib K] [--weights W] [--sync-arm-ms M]
 *
 * --sync-arm-ms M: before the backward read of an activation, wait (up to M ms) until the sampler has
 * protected its window again after the forward write (the service thread's rearm), while any window is
 * protected at all (the untouched weights' windows stay protected while sampling runs). Without it, on a
 * loaded machine a rearm that comes late misses the read: what the test checks is where the passes are
 * put, not how soon the service thread gets to run.
 *
 * stdout: one checksum line at the end, the same with or without Sentinel. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps_protection.h"

/* noinline: one call site per kind of buffer. */
__attribute__((noinline)) static uint8_t* new_activation(size_t bytes) { return malloc(bytes); }
__attribute__((noinline)) static uint8_t* new_gradient(size_t bytes) { return malloc(bytes); }
__attribute__((noinline)) static uint8_t* new_weight(size_t bytes) { return malloc(bytes); }

static uint64_t read_pass(const uint8_t* p, size_t bytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes; i += 64) sum += p[i];
  return sum;
}

int main(int argc, char** argv) {
  int steps = 8, layers = 8, weights = 300, sync_arm_ms = 0;
  size_t kib = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--layers") == 0) layers = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--kib") == 0) kib = (size_t)atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--weights") == 0) weights = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--sync-arm-ms") == 0) sync_arm_ms = atoi(argv[i + 1]);
  }
  if (layers < 1 || layers > 64 || weights < 0 || weights > 4096) return 2;
  const size_t bytes = kib << 10;
  uint8_t* w[4096];
  uintptr_t w_lo[4096], w_hi[4096]; /* the weights' windows stay protected while sampling runs */
  for (int k = 0; k < weights; ++k) {
    w[k] = new_weight(64 << 10);
    memset(w[k], k, 64 << 10);
    w_lo[k] = (uintptr_t)w[k];
    w_hi[k] = w_lo[k] + (64 << 10);
  }
  void (*step_begin)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "sentinel_step_begin");
  uint64_t checksum = 0;
  uint8_t* act[64];
  int armed_at_birth[64] = {0};
  for (int s = 0; s < steps; ++s) {
    if (step_begin != NULL) step_begin();
    for (int l = 0; l < layers; ++l) {
      act[l] = new_activation(bytes);
      /* The allocation path arms a birth's window before returning it, or not at all (outside the profile). */
      if (sync_arm_ms > 0) {
        const uintptr_t lo = (uintptr_t)act[l], hi = lo + bytes;
        armed_at_birth[l] = any_range_protected(&lo, &hi, 1);
      }
      memset(act[l], s + l, bytes);
    }
    for (int l = layers - 1; l >= 0; --l) {
      uint8_t* grad = new_gradient(bytes);
      if (armed_at_birth[l]) wait_for_window(act[l], bytes, w_lo, w_hi, weights, sync_arm_ms);
      checksum += read_pass(act[l], bytes);
      memset(grad, l, bytes);
      checksum += grad[bytes - 1];
      free(grad);
      free(act[l]);
    }
  }
  for (int k = 0; k < weights; ++k) {
    checksum += w[k][0];
    free(w[k]);
  }
  printf("checksum %llu\n", (unsigned long long)checksum);
  return 0;
}
