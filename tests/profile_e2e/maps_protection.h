/* For the test programs that wait for the software sampler (--sync-arm-ms): whether a page of some range
 * is PROT_NONE, read from /proc/self/maps (a window the sampler has protected shows as a ---p mapping). */
#ifndef SENTINEL_TESTS_PROFILE_E2E_MAPS_PROTECTION_H
#define SENTINEL_TESTS_PROFILE_E2E_MAPS_PROTECTION_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Whether a ---p mapping overlaps [lo[k], hi[k]) for some k < n. */
static int any_range_protected(const uintptr_t* lo, const uintptr_t* hi, int n) {
  static char line[4096]; /* static: no large allocation while sampling */
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    unsigned long a, b;
    char perms[5] = {0};
    if (sscanf(line, "%lx-%lx %4s", &a, &b, perms) != 3 || strcmp(perms, "---p") != 0) continue;
    for (int k = 0; k < n && !found; ++k) found = a < hi[k] && lo[k] < b;
  }
  fclose(f);
  return found;
}

static uint64_t monotonic_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Waits (up to max_ms) while [p, p + bytes) has no protected page and one of the n `armed` ranges has one,
 * i.e. while the sampler runs (those ranges' windows stay protected then) and has not protected p's window
 * again yet. */
static void wait_for_window(const void* p, size_t bytes, const uintptr_t* armed_lo, const uintptr_t* armed_hi,
                            int n, int max_ms) {
  const uint64_t end = monotonic_us() + (uint64_t)max_ms * 1000u;
  const uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
  while (!any_range_protected(&lo, &hi, 1) && any_range_protected(armed_lo, armed_hi, n) && monotonic_us() < end) {
    usleep(50);
  }
}

#endif
