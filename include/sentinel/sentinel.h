/* Sentinel's public interface for programs that want to talk to the runtime.
 *
 * Nothing here is required: Sentinel works on unmodified programs. A program that knows where its
 * training steps begin can say so, which replaces automatic step detection.
 *
 * To keep a program runnable without Sentinel, look the functions up at run time, e.g. in C
 * `dlsym(RTLD_DEFAULT, "sentinel_step_begin")`, or in Python
 * `getattr(ctypes.CDLL(None), "sentinel_step_begin", None)`.
 *
 * Thread safety: every function may be called from any thread at any time. */
#ifndef SENTINEL_SENTINEL_H_
#define SENTINEL_SENTINEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new training step begins with the next large allocation. The first call switches automatic step
 * detection off for the rest of the run. */
void sentinel_step_begin(void);

/* 1 when Sentinel is loaded and tracking objects, 0 when it runs as a pass-through allocator. */
int sentinel_active(void);

struct sentinel_counters {
  uint64_t steps_detected;     /* complete training steps seen so far */
  int64_t current_step;        /* index of the step in progress, -1 when unknown */
  uint32_t step_period;        /* object allocations per step, 0 when unknown */
  uint64_t objects_tracked;    /* objects allocated so far */
  uint64_t live_objects;
  uint64_t live_bytes;
  uint64_t peak_object_bytes;
};

/* Fills *out; returns 0, or -1 when out is NULL. */
int sentinel_get_counters(struct sentinel_counters* out);

#ifdef __cplusplus
}
#endif

#endif /* SENTINEL_SENTINEL_H_ */
