// Prints what Sentinel's configuration reader sees in this process's environment, one line:
// "secure=<0|1> mode=<mode> log_file=<path> unknown=<0|1>". secure_env_test runs a setuid copy of it.
#include <cstdio>

#include "core/config.h"
#include "core/env.h"

int main() {
  sentinel::Config config;
  if (const sentinel::Status parsed = sentinel::parse_config_from_environ(&config); !parsed.is_ok()) {
    std::printf("error=%s\n", parsed.message());
    return 1;
  }
  char message[512];
  const bool unknown = sentinel::find_unknown_variable(message, sizeof message);
  std::printf("secure=%d mode=%s log_file=%s unknown=%d\n", sentinel::secure_execution() ? 1 : 0,
              sentinel::mode_name(config.mode), config.log_file, unknown ? 1 : 0);
  return 0;
}
