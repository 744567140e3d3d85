#include "logging.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <string>

#include "core/output_file.h"
#include "runtime_state.h"

namespace sentinel::rt {
namespace {

// Created once and never destroyed: the log must outlive every other static of the process, because
// the program may still allocate (and Sentinel may still report) during exit.
spdlog::logger* g_logger = nullptr;

// SENTINEL_LOG_FILE: appended to across runs, so it cannot be renamed into place; opened with
// O_NOFOLLOW|O_APPEND (core/output_file.h) so that a symlink planted at its name is refused.
class AppendFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit AppendFileSink(int fd) : fd_(fd) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a full disk loses log lines, never the program
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  void flush_() override {}  // every line is already a write(2)

 private:
  int fd_;  // never closed: the log outlives every other static
};

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
      int fd = -1;
      if (const Status opened = open_append_no_follow(config.log_file, &fd); !opened.is_ok()) {
        file_error = opened.message();
      } else {
        sink = std::make_shared<AppendFileSink>(fd);
      }
    }
    if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto* logger = new spdlog::logger("sentinel", sink);
    logger->set_pattern("[sentinel %P] [%l] %v");
    logger->set_level(to_spdlog(config.log_level));
    logger->flush_on(spdlog::level::trace);
    g_logger = logger;
    if (!file_error.empty()) {
      logger->error("SENTINEL_LOG_FILE: {}; logging to stderr", file_error);
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
