/* Persistent objects that share a tag. A model's set-up allocates its parameters one per set-up step
 * from one call site, so each is its step's first object of that site: the same (call-site, occurrence),
 * the same tag. (googlenet's parameters came out so because the step detector had locked onto a 38-event
 * set-up loop; here the set-up steps are marked.) Then it trains: every step allocates an input and
 * three activations, reads every parameter twice, and frees them.
 *
 *   twin_params [--steps N] [--twins K] [--kib S]
 *
 * Parameter k has S KiB + k pages, so the test can tell them apart. Steps are marked with
 * sentinel_step_begin() when the library is preloaded. Each phase begins with a 2 ms sleep, so that the
 * software sampler's thread has armed it before the program touches anything. stdout: one checksum line, the same with or
 * without Sentinel. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* noinline: one call site per kind of buffer. */
__attribute__((noinline)) static uint8_t* new_parameter(size_t bytes) { return malloc(bytes); }
__attribute__((noinline)) static uint8_t* new_input(size_t bytes) { return malloc(bytes); }
__attribute__((noinline)) static uint8_t* new_activation(size_t bytes) { return malloc(bytes); }

static uint64_t read_pass(const uint8_t* p, size_t bytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes; i += 64) sum += p[i];
  return sum;
}

int main(int argc, char** argv) {
  int steps = 12, twins = 8;
  size_t kib = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--twins") == 0) twins = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--kib") == 0) kib = (size_t)atoi(argv[i + 1]);
  }
  if (twins < 1 || twins > 64 || steps < 1) return 2;
  void (*step_begin)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "sentinel_step_begin");
  uint8_t* param[64];
  size_t param_bytes[64];
  for (int k = 0; k < twins; ++k) {
    if (step_begin != NULL) step_begin();
    param_bytes[k] = (kib << 10) + (size_t)k * 4096;
    param[k] = new_parameter(param_bytes[k]);
    memset(param[k], k + 1, param_bytes[k]);
  }
  const size_t act_bytes = kib << 10;
  uint64_t checksum = 0;
  for (int s = 0; s < steps; ++s) {
    if (step_begin != NULL) step_begin();
    uint8_t* in = new_input(act_bytes);
    usleep(2000); /* each phase lasts long enough for the software sampler's service thread to arm it */
    memset(in, s, act_bytes);
    uint8_t* act[3];
    for (int a = 0; a < 3; ++a) {
      act[a] = new_activation(act_bytes);
      usleep(2000);
      memset(act[a], s + a, act_bytes);
      for (int k = 0; k < twins; ++k) checksum += read_pass(param[k], param_bytes[k]);
    }
    checksum += read_pass(in, act_bytes);
    for (int a = 2; a >= 0; --a) {
      checksum += read_pass(act[a], act_bytes);
      free(act[a]);
    }
    free(in);
  }
  for (int k = 0; k < twins; ++k) free(param[k]);
  printf("checksum %llu\n", (unsigned long long)checksum);
  return 0;
}
