// Fault injection at start-up, for tests of the preload: only the fault-injection build of the runtime
// (libsentinel-faults.so, built when the CMake option SENTINEL_FAULT_INJECTION is ON) honours
// SENTINEL_FAULT_INJECT=seed:rate[:op,op,...] (grammar: os/fault_injector.h, docs/fault-injection.md).
// In libsentinel.so both functions do nothing, so the variable cannot take effect in production (it is
// reported as an unknown variable there).
//
// Thread safety: called once from initialise() and once from at_exit(); no allocation (stderr lines are
// formatted on the stack and written with write(2)).
#pragma once

namespace sentinel::rt {

// Starts injecting if the build and the environment ask for it. Called before the heap is reserved, so
// every system call of the runtime goes through the injector.
void fault_injection_start() noexcept;
// Writes one line to stderr with what was injected: "sentinel: fault injection: failed N of M calls ...".
void fault_injection_report() noexcept;

}  // namespace sentinel::rt
