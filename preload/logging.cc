#include "logging.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <string>

#include "runtime_state.h"

namespace sentinel::rt {
namespace {

// Created once and never destroyed: the log must outlive every other static of the process, because
// the program may still allocate (and Sentinel may still report) during exit.
spdlog::logger* g_logger = nullptr;

spdlog::level::level_enum to_spdlog(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace: return spdlog::level::trace;
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

void log_init(const Config& config) noexcept {
  try {
    spdlog::sink_ptr sink;
    std::string file_error;
    if (config.log_file[0] != '\0') {
      try {
        sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(config.log_file, false);
      } catch (const std::exception& e) {
        file_error = e.what();
      }
    }
    if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto* logger = new spdlog::logger("sentinel", sink);
    logger->set_pattern("[sentinel %P] [%l] %v");
    logger->set_level(to_spdlog(config.log_level));
    logger->flush_on(spdlog::level::trace);
    g_logger = logger;
    if (!file_error.empty()) {
      logger->error("cannot open SENTINEL_LOG_FILE='{}' ({}); logging to stderr", config.log_file,
                    file_error);
    }
  } catch (...) {
    g_logger = nullptr;  // logging is lost, the program is not
  }
}

void log_write(LogLevel level, const char* text) noexcept {
  if (g_logger == nullptr) return;
  try {
    g_logger->log(to_spdlog(level), "{}", text);
  } catch (...) {
  }
}

void flush_deferred() noexcept {
  g_state.log.drain([](LogLevel level, const char* text) { log_write(level, text); });
}

}  // namespace sentinel::rt
