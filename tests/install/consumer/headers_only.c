/* Uses only the header and finds Sentinel at run time, so it runs with and without the preload. */
#include <dlfcn.h>
#include <sentinel/sentinel.h>
#include <stdio.h>

int main(void) {
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sentinel_active");
  printf("active %d\n", active != NULL ? active() : 0);
  return 0;
}
