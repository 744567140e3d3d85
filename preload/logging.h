// Sentinel's log: spdlog to stderr or SENTINEL_LOG_FILE, for code that may allocate. Code on the
// allocation path queues messages in g_state.log instead; flush_deferred() writes them out.
//
// Thread safety: all functions are thread-safe once log_init() has returned.
#pragma once

#include "core/config.h"

namespace sentinel::rt {

void log_init(const Config& config) noexcept;
void log_write(LogLevel level, const char* text) noexcept;
void flush_deferred() noexcept;

}  // namespace sentinel::rt
