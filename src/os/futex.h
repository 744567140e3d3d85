// Minimal futex wrappers on a 32-bit atomic word (Linux). They neither allocate nor take locks.
// Thread safety: free functions; safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace sentinel::os {

// Sleeps while *word == expected, at most `timeout` (negative = forever). Spurious wake-ups happen;
// callers re-check their condition.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout);
// Wakes up to `count` sleepers on word.
void futex_wake(std::atomic<uint32_t>* word, int count);

}  // namespace sentinel::os
