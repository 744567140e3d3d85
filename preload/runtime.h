// Sentinel's runtime inside the program: the malloc family as seen by override.cc, the public API, and
// the process lifecycle (init, fork, exit).
//
// Routing: an allocation of at least SENTINEL_MIN_OBJECT bytes becomes an object in the ObjectHeap;
// everything else, every call made before Sentinel is initialised, every call made while this thread is
// already inside Sentinel (a nested allocation from libunwind, dladdr, the logger, ...) and every call
// in pass-through mode goes to the system allocator untouched. free() tells the two apart by address.
//
// Thread safety: every entry point is safe from any thread. Locks taken on the allocation path are spin
// locks around a few dozen instructions and never held across a call out of Sentinel.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sentinel::rt {

// malloc and free are inline (object_path.h): their fast paths are part of the exported functions.
void* calloc(size_t n, size_t size) noexcept;
void* realloc(void* p, size_t size) noexcept;
void* reallocarray(void* p, size_t n, size_t size) noexcept;
int posix_memalign(void** out, size_t align, size_t size) noexcept;
void* aligned_alloc(size_t align, size_t size) noexcept;
void* memalign(size_t align, size_t size) noexcept;
void* valloc(size_t size) noexcept;
void* pvalloc(size_t size) noexcept;
size_t malloc_usable_size(void* p) noexcept;

// Marks the calling thread as Sentinel's own for its whole life: everything it allocates goes to the
// system allocator and is never an object (the service thread).
void mark_thread_internal() noexcept;
// Whether the calling thread is inside Sentinel (or is one of Sentinel's own threads). Async-signal-safe.
bool thread_inside_sentinel() noexcept;
// Wakes the service thread (futex); safe inside malloc.
void wake_service() noexcept;

// The fast budget's parked extents (freed fast extents that keep their pages; place/budget_placer.h).
// release_extent hands a freed object's extent back to the heap (parked when the budget allows it, else
// pages first, then the budget). make_fast_room returns parked pages until a fast reservation of `extent`
// bytes fits, or none is left. Both may call madvise; neither holds a lock across it.
void release_extent(uint32_t slot) noexcept;
void make_fast_room(uint64_t extent) noexcept;

// Process lifecycle, called from the library constructor and the atexit handler.
void initialise() noexcept;
void at_exit() noexcept;

}  // namespace sentinel::rt
