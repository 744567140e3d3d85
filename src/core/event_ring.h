// Object events handed from the allocation path to the service thread, through a BoundedRing (its
// protocol and thread safety: core/bounded_ring.h). The runtime reserves an event under its step-clock
// lock, so the order of the events is the order of the step clock, and fills it in once the extent
// exists, after the lock is released.
#pragma once

#include <cstdint>

#include "core/bounded_ring.h"

namespace sentinel {

// kAborted: a reserved event whose allocation did not happen (the heap was full); consumers skip it.
// kResize: a realloc changed a live object's size within its extent (size: the new one).
enum class ObjectEventKind : uint8_t { kAlloc, kFree, kAborted, kResize };

struct ObjectEvent {
  ObjectEventKind kind;
  uint8_t pool;      // kAlloc: the heap pool the object was born in
  uint32_t slot;
  uint32_t generation;
  uint32_t occurrence;
  uint32_t event;    // position on the step clock
  uint32_t period;   // the detector's period at the time
  int64_t step;      // step index, -1 when unknown
  uint64_t relocks;  // the detector's re-detection count: a change means a new step structure
  uint64_t tag;
  uint64_t site;
  uint64_t size;
  uint64_t extent_bytes;
  uint64_t time_ns;
  uint64_t live_bytes;  // object bytes alive after this event
  // The step clock: allocation events counted since the process began (this event's own tick for
  // an allocation, the latest tick for a free). The emulated PMU stamps samples with it.
  uint64_t clock;
};

using EventRing = BoundedRing<ObjectEvent, 1u << 15>;

}  // namespace sentinel
