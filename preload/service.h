// The service thread: everything of Sentinel's that may allocate, block or take its time runs here, off the
// program's threads (its own allocations go to the system allocator).
//
// One dispatcher drains the object-event ring and hands each event, in step-clock order, to every consumer:
// the profiler (while it profiles) and the manager (managed mode). Both read the same mirror of the live
// objects, kept by the dispatcher: an allocation enters it before the consumers see the event, a free
// leaves it after they have.
//
// When it starts: at initialisation in profile and managed mode, with a status file, and whenever placement
// is on (the migration engine's thread makes the process multi-threaded anyway). In track mode otherwise,
// when the program creates its first thread (program_thread_create): until then a single-threaded program
// stays single-threaded, which glibc's allocator serves without its locks (a second thread, even an idle
// one, doubles the cost of a realloc or a small block from its bins: bench/preload), and the step search
// runs on the allocating thread, a bounded slice per object (runtime.cc), outside every lock.
//
// Thread safety: service_start_once() from any thread (the first call starts it); service_drain() from the
// exit handler (it takes the dispatcher's lock, so it never runs at the same time as the service thread's
// own pass); service_running() from any thread.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <unordered_map>

#include "core/event_ring.h"
#include "manage/twin_tags.h"

namespace sentinel::rt {

struct LiveObject {
  uint64_t tag = 0;
  uint64_t site = 0;
  uint32_t occurrence = 0;
  uint64_t size = 0;
  uint64_t extent_bytes = 0;
};
// Keyed by (slot << 32) | generation: one life of one extent.
using LiveObjects = std::unordered_map<uint64_t, LiveObject>;

inline uint64_t instance_key(uint32_t slot, uint32_t generation) { return (uint64_t{slot} << 32) | generation; }

// The objects of `live` but `born_now` that share a tag get tags of their own (manage/twin_tags.h), in `live`;
// the renames are kept for the manager's executor until take_twin_renames(). Called where the objects
// alive before a step become a profile's persistent objects (profiler.cc, begin_profile) or a recorded
// profile's (manager_match.cc). Service thread only; may throw std::bad_alloc.
void name_persistent_twins(LiveObjects& live, uint64_t born_now);
std::vector<manage::TwinRename> take_twin_renames();

void service_start_once() noexcept;
bool service_running() noexcept;
// pthread_create as the program sees it (override.cc): starts the service thread first, if not yet.
int program_thread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) noexcept;
// One dispatcher pass on the calling thread (the exit handler's last look at the events).
void service_drain() noexcept;
// In a forked child: the service thread is gone.
void service_fork_child() noexcept;

}  // namespace sentinel::rt
