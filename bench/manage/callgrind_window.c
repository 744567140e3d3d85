/* Callgrind client requests for a Python workload (loaded with ctypes by bench/results/guest_step.py
 * --callgrind-window): instrumentation starts at the first step of the window, so start-up and import
 * run uninstrumented (several times faster under valgrind), and the counts of every thread are dumped
 * at its end. Outside valgrind every call is a few no-op instructions. */
#include <valgrind/callgrind.h>

void sentinel_callgrind_start(void) {
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
}

void sentinel_callgrind_dump(void) { CALLGRIND_DUMP_STATS_AT("window"); }
