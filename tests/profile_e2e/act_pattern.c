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
#include <time.h>
#include <unistd.h>

/* noinline: one call site per kind of buffer. */
__attribute__((noinline)) static uint8_t* new_activation(size_t bytes) { return malloc(bytes); }
__attribute__((noinline)) static uint8_t* new_gradient(size_t bytes) { return malloc(bytes); }
__attribute__((noinline)) static uint8_t* new_weight(size_t bytes) { return malloc(bytes); }

/* Whether a page of [lo, hi), or with lo == hi of any of the n weights, is PROT_NONE (---p) in
 * /proc/self/maps: a window the sampler has protected. */
static int any_protected(uintptr_t lo, uintptr_t hi, uint8_t* const* w, int n, size_t w_bytes) {
  static char line[4096]; /* static: no large allocation while sampling */
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    unsigned long a, b;
    char perms[5] = {0};
    if (sscanf(line, "%lx-%lx %4s", &a, &b, perms) != 3 || strcmp(perms, "---p") != 0) continue;
    if (lo != hi) {
      found = a < hi && lo < b;
      continue;
    }
    for (int k = 0; k < n && !found; ++k) {
      const uintptr_t x = (uintptr_t)w[k];
      found = a < x + w_bytes && x < b;
    }
  }
  fclose(f);
  return found;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Waits while the activation has no protected page and some weight has one (sampling runs). */
static void wait_for_rearm(const uint8_t* p, size_t bytes, uint8_t* const* w, int n, size_t w_bytes, int max_ms) {
  const uint64_t end = now_us() + (uint64_t)max_ms * 1000u;
  const uintptr_t lo = (uintptr_t)p;
  while (!any_protected(lo, lo + bytes, w, n, w_bytes) && any_protected(0, 0, w, n, w_bytes) && now_us() < end) {
    usleep(50);
  }
}

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
  for (int k = 0; k < weights; ++k) {
    w[k] = new_weight(64 << 10);
    memset(w[k], k, 64 << 10);
  }
  void (*step_begin)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "sentinel_step_begin");
  uint64_t checksum = 0;
  uint8_t* act[64];
  for (int s = 0; s < steps; ++s) {
    if (step_begin != NULL) step_begin();
    for (int l = 0; l < layers; ++l) {
      act[l] = new_activation(bytes);
      memset(act[l], s + l, bytes);
    }
    for (int l = layers - 1; l >= 0; --l) {
      uint8_t* grad = new_gradient(bytes);
      if (sync_arm_ms > 0) wait_for_rearm(act[l], bytes, w, weights, 64 << 10, sync_arm_ms);
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
