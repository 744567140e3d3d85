/* A program built against an installed Sentinel (pkg-config or find_package) and linked with
 * libsentinel.so, which makes Sentinel its allocator: it allocates one object and reads the counters. */
#include <sentinel/sentinel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  char* object = malloc(1 << 20);
  memset(object, 1, 1 << 20);
  struct sentinel_counters c;
  if (sentinel_get_counters(&c) != 0) return 1;
  printf("active %d objects_tracked %llu\n", sentinel_active(), (unsigned long long)c.objects_tracked);
  free(object);
  return 0;
}
