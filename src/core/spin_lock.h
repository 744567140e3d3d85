// The spin lock of core and the runtime is os/spin_lock.h's (one lock for the whole code base: migrate/
// may not include core). These names keep the includes of core/ and preload/ unchanged.
//
// Thread safety and invariants: as os/spin_lock.h states.
#pragma once

#include "os/spin_lock.h"

namespace sentinel {

using os::SpinGuard;
using os::SpinLock;

}  // namespace sentinel
