/* Allocates, frees and moves objects as its arguments say, in order, touching every page of each new
 * object:
 *   aN=SIZE  allocate slot N (0..63) with SIZE bytes (suffix K or M), and write all of it
 *   bN=SIZE  the same without writing it
 *   cN=SIZE  calloc slot N, and exit with 6 unless all of it reads as zeros
 *   rN       print "resident N PAGES": pages of slot N's object the kernel has mapped (mincore)
 *   fN       free slot N
 *   mN@M     queue a move of slot N to the node slot M's object is on (sentinel_move_object)
 *   w        wait for every move queued so far (refused or failed ones too)
 *   uN       print "usable N BYTES": malloc_usable_size of slot N
 *   vN       print "value N BYTE": the first byte of slot N's object
 * For tests that need an exact sequence of births, frees and moves (parked_room_test.cc). The API is
 * looked up at run time: the program runs with and without the preload. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int (*node_fn)(const void*);
typedef uint64_t (*move_fn)(const void*, int);
typedef int (*wait_fn)(uint64_t, int);

int main(int argc, char** argv) {
  void* slot[64] = {0};
  size_t size[64] = {0};
  uint64_t tickets[64];
  int queued = 0;
  const node_fn node_of = (node_fn)dlsym(RTLD_DEFAULT, "sentinel_object_node");
  const move_fn move = (move_fn)dlsym(RTLD_DEFAULT, "sentinel_move_object");
  const wait_fn wait = (wait_fn)dlsym(RTLD_DEFAULT, "sentinel_wait_move");
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (a[0] == 'w') {
      /* A refused or failed move is fine (the tests read the stats); one still running after a minute is not. */
      for (int t = 0; t < queued; ++t) {
        if (wait == NULL || (tickets[t] != 0 && wait(tickets[t], 60000) == 0)) return 4;
      }
      queued = 0;
      continue;
    }
    char* end = NULL;
    const long n = strtol(a + 1, &end, 10);
    if (n < 0 || n >= 64) return 2;
    if (a[0] == 'u') {
      printf("usable %ld %zu\n", n, malloc_usable_size(slot[n]));
    } else if (a[0] == 'v') {
      printf("value %ld %d\n", n, *(const unsigned char*)slot[n]);
    } else if (a[0] == 'r') {
      /* Objects are page-aligned under the preload. */
      const size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (size[n] + page - 1) / page;
      unsigned char vec[4096];
      size_t resident = 0;
      if (pages > sizeof vec || ((uintptr_t)slot[n] & (page - 1)) != 0 || mincore(slot[n], size[n], vec) != 0) return 5;
      for (size_t k = 0; k < pages; ++k) resident += vec[k] & 1;
      printf("resident %ld %zu\n", n, resident);
    } else if (a[0] == 'f') {
      free(slot[n]);
      slot[n] = NULL;
    } else if (a[0] == 'm' && *end == '@') {
      const long to = strtol(end + 1, NULL, 10);
      if (to < 0 || to >= 64 || move == NULL || node_of == NULL || queued == 64) return 4;
      tickets[queued++] = move(slot[n], node_of(slot[to]));
    } else if ((a[0] == 'a' || a[0] == 'b' || a[0] == 'c') && *end == '=') {
      char* unit = NULL;
      unsigned long long bytes = strtoull(end + 1, &unit, 10);
      if (*unit == 'K') bytes <<= 10;
      if (*unit == 'M') bytes <<= 20;
      slot[n] = a[0] == 'c' ? calloc(1, bytes) : malloc(bytes);
      if (slot[n] == NULL) return 3;
      size[n] = bytes;
      if (a[0] == 'a') memset(slot[n], (int)n + 1, bytes);
      if (a[0] == 'c') {
        for (size_t k = 0; k < bytes; ++k) {
          if (((const unsigned char*)slot[n])[k] != 0) return 6;
        }
      }
    } else {
      return 2;
    }
  }
  for (int n = 0; n < 64; ++n) free(slot[n]);
  return 0;
}
