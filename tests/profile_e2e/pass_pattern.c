/* A program whose step makes a known number of passes over each of its buffers, written the way a
 * user would write it: every step allocates five buffers of 8 MiB from one call site, fills each with
 * memset and then reads it again, so that buffer i gets 8, 4, 2, 1 and 0 passes (one write pass, the
 * rest reads; the last buffer is never touched), and frees them. Each pass over 8 MiB misses in any
 * cache smaller than that. Steps are marked with sentinel_step_begin() when the library is preloaded.
 *
 *   pass_pattern [--steps N] [--mib M]
 *
 * stdout: one checksum line at the end, the same with or without Sentinel. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int kPasses[5] = {8, 4, 2, 1, 0};

/* noinline: the buffers' call site is this one function. */
__attribute__((noinline)) static uint8_t* new_buffer(size_t bytes) { return malloc(bytes); }

static uint64_t read_pass(const uint8_t* p, size_t bytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes; i += 64) sum += p[i];
  return sum;
}

int main(int argc, char** argv) {
  int steps = 8;
  size_t mib = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--mib") == 0) mib = (size_t)atoi(argv[i + 1]);
  }
  const size_t bytes = mib << 20;
  void (*step_begin)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "sentinel_step_begin");
  uint64_t checksum = 0;
  for (int s = 0; s < steps; ++s) {
    if (step_begin != NULL) step_begin();
    uint8_t* buf[5];
    for (int b = 0; b < 5; ++b) buf[b] = new_buffer(bytes);
    for (int b = 0; b < 5; ++b) {
      if (kPasses[b] == 0) continue;
      memset(buf[b], s + b, bytes);
      for (int pass = 1; pass < kPasses[b]; ++pass) checksum += read_pass(buf[b], bytes);
    }
    for (int b = 0; b < 5; ++b) free(buf[b]);
  }
  printf("checksum %llu\n", (unsigned long long)checksum);
  return 0;
}
