// What a fresh page costs this machine after its memory was freed, per byte: the fault and zeroing a fast
// birth under a budget pays when it finds no parked pages (docs/placement.md). Maps 256 MiB of huge pages,
// and in each round drops them (MADV_DONTNEED), waits, and faults them in again with MADV_POPULATE_WRITE.
// On a virtual machine whose balloon reports free pages to its host (Linux page_reporting), memory freed for
// longer than the report takes comes back from the host at each fault: this VM measured 1.2-2.4 ns/B after
// a wait of 0.5 s or more, 0.11 ns/B right away or with reporting delayed (docs/results.md, "The tails of
// parked extents, and freed pages a hypervisor takes back").
//
//   cc -O2 -o /tmp/fresh_page_cost bench/manage/fresh_page_cost.c && /tmp/fresh_page_cost [WAIT_SECONDS]
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const size_t bytes = (size_t)256 << 20, huge = (size_t)2 << 20;
  const double wait = argc > 1 ? atof(argv[1]) : 1.0;
  char* m = mmap(NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return perror("mmap"), 1;
  char* p = (char*)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
  madvise(p, bytes, MADV_HUGEPAGE);
  printf("wait between free and fault: %.2f s\n", wait);
  for (int round = 0; round < 5; ++round) {
    const double t0 = now();
    if (madvise(p, bytes, MADV_POPULATE_WRITE) != 0) return perror("MADV_POPULATE_WRITE"), 1;
    const double t1 = now();
    printf("round %d: fault in %.3f ns/B\n", round, (t1 - t0) / (double)bytes * 1e9);
    madvise(p, bytes, MADV_DONTNEED);
    usleep((useconds_t)(wait * 1e6));
  }
  return 0;
}
