#include "run_sentinel.h"

#include <gtest/gtest.h>

#include "commands.h"

namespace sentinel::test {

int run_sentinel(const std::vector<std::string>& args, std::string* out, std::string* err) {
  std::vector<std::string> storage = args;
  storage.insert(storage.begin(), "sentinel");
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = cli::sentinel_main(static_cast<int>(storage.size()), argv.data());
  *out = ::testing::internal::GetCapturedStdout();
  *err = ::testing::internal::GetCapturedStderr();
  return rc;
}

}  // namespace sentinel::test
