// Every SENTINEL_* variable the runtime reads (core/config.h's registry), set to random hostile values
// in a real program under the preload: the program never crashes and computes what it computes
// without Sentinel; a rejected value gives exactly one message, naming the variable, and the process
// runs as a pass-through allocator. Values never contain '/' so that accepted paths stay inside the
// scratch directory the program runs in.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "core/config.h"

namespace {

struct RunResult {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs the child in `dir` with the preload and NAME=VALUE added to a minimal environment.
RunResult run_child(const std::string& dir, const std::string& name, const std::string& value, bool preload) {
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(120);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
    // The sanitizer stage (scripts/sanitizers.sh) runs this test with an instrumented preload and child.
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
      if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
    }
    if (preload) env.push_back("LD_PRELOAD=" SENTINEL_LIB);
    if (!name.empty()) env.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>(HOSTILE_ENV_CHILD), nullptr};
    execve(HOSTILE_ENV_CHILD, argv, envp.data());
    _exit(121);
  }
  RunResult r;
  waitpid(pid, &r.status, 0);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Random values of several kinds: printable junk, raw bytes, and near-misses of valid values.
std::string hostile_value(std::mt19937_64& rng) {
  static const char* const kNearMisses[] = {
      "", " ", "0", "-1", "+1", "1e9", "0x10", "18446744073709551615", "18446744073709551616",
      "99999999999999999999T", "64KiBB", "64 K", "100%", "100.1%", "0%", "0.0%", "%", ".5%", "1.%",
      "track ", "TRACK", "managed\n", "profile\t", "off", "trace", "auto", "software", "pebs", "ibs",
      "none", "yes", "true", "1,2", "0-1", "\x1b[31mred", "\xff\xfe", "a=b", "'", "\\", "%p%r%%"};
  std::uniform_int_distribution<int> kind(0, 3);
  std::string v;
  switch (kind(rng)) {
    case 0: return kNearMisses[rng() % (sizeof kNearMisses / sizeof kNearMisses[0])];
    case 1: {
      const size_t n = rng() % 24;
      for (size_t i = 0; i < n; ++i) v.push_back(static_cast<char>(' ' + rng() % 95));
      break;
    }
    case 2: {
      const size_t n = rng() % 300;
      for (size_t i = 0; i < n; ++i) v.push_back(static_cast<char>(1 + rng() % 255));
      break;
    }
    default: {
      v = std::to_string(rng() >> (rng() % 64));
      static const char* const kSuffixes[] = {"", "K", "M", "G", "T", "%", "KiB", "MB", "x", ".5"};
      v += kSuffixes[rng() % (sizeof kSuffixes / sizeof kSuffixes[0])];
    }
  }
  for (char& c : v)
    if (c == '/') c = '_';
  return v;
}

TEST(HostileEnvironment, EveryVariableWithRandomValuesNeverCrashesAndRejectsWithOneMessage) {
  const sentinel::testing::TempDir tmp("sentinel-hostile-env");
  ASSERT_TRUE(tmp.ok());
  const std::string& dir = tmp.path();
  const RunResult plain = run_child(dir, "", "", false);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const std::string expected_checksum = plain.out.substr(plain.out.find("checksum="));

  std::mt19937_64 rng(14);
  constexpr int kValuesPerVariable = 12;
  size_t rejected = 0, accepted = 0;
  for (size_t i = 0; i < sentinel::config_variable_count(); ++i) {
    const std::string name = sentinel::config_variable(i).name;
    for (int k = 0; k < kValuesPerVariable; ++k) {
      const std::string value = hostile_value(rng);
      const RunResult r = run_child(dir, name, value, true);
      SCOPED_TRACE(name + "='" + value + "'");
      ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << "status " << r.status << "\n" << r.err;
      ASSERT_NE(r.out.find(expected_checksum), std::string::npos) << r.out;
      const size_t messages = count(r.err, "sentinel: invalid ");
      if (messages > 0) {
        ++rejected;
        EXPECT_EQ(messages, 1u) << r.err;
        EXPECT_EQ(count(r.err, "sentinel: invalid " + name + "='"), 1u) << r.err;
        EXPECT_EQ(r.out.rfind("active=0", 0), 0u) << "a rejected value must leave pass-through: " << r.out;
      } else {
        ++accepted;
      }
    }
  }
  // Random values are mostly wrong: the test exercised the rejection path, not only acceptance.
  EXPECT_GT(rejected, accepted);
  std::printf("%zu values rejected, %zu accepted\n", rejected, accepted);
}

}  // namespace
