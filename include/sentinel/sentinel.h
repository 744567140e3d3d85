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

/* What Sentinel holds, for soak tests that check it stays flat over a long run. */
struct sentinel_footprint {
  uint64_t extents;               /* object-heap extents carved so far (each keeps a table record) */
  uint64_t extent_bytes;          /* address space those extents span */
  uint64_t cached_bytes;          /* freed extents kept for reuse */
  uint64_t cached_resident_bytes; /* of which still backed by memory */
};

/* Fills *out; returns 0, or -1 when out is NULL. */
int sentinel_get_footprint(struct sentinel_footprint* out);

/* The NUMA node Sentinel placed the object that starts at p on, or -1 (not an object start). */
int sentinel_object_node(const void* p);

/* Moves the object that starts at p to NUMA node `node` on Sentinel's background thread. Returns a
 * ticket (> 0), or 0 when refused: p is not a live object, there is a single memory node, the object is
 * already there or already moving, or the queue is full. A move to the fast node takes its share of the
 * fast-memory budget when it starts, after the moves queued ahead of it: one that finds no room then
 * fails (sentinel_wait_move returns -1). A failed move leaves the data where it was, intact. */
uint64_t sentinel_move_object(const void* p, int node);

/* Waits up to timeout_ms (-1: forever) for a move. Returns 1 when it is done, 0 when it is still
 * queued or running, -1 when it failed, was cancelled or the ticket is unknown. */
int sentinel_wait_move(uint64_t ticket, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* SENTINEL_SENTINEL_H_ */
