// `sentinel run`: maps options to SENTINEL_* variables, preloads libsentinel.so, runs the program,
// and prints what Sentinel saw.
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <functional>
#include <vector>

#include "commands.h"

namespace sentinel::cli {
namespace {

struct OptionToEnv {
  const char* option;
  const char* variable;
  const char* help;
};

// Values are checked by the runtime itself, which names the variable and the accepted values.
constexpr OptionToEnv kOptions[] = {
    {"--mode", "SENTINEL_MODE", "passthrough | track | profile (default track)"},
    {"--fast-budget", "SENTINEL_FAST_BUDGET", "bytes (K/M/G) or % of peak object bytes kept on the fast node"},
    {"--fast-node", "SENTINEL_FAST_NODE", "override the detected fast node"},
    {"--slow-node", "SENTINEL_SLOW_NODE", "override the detected slow node"},
    {"--min-object", "SENTINEL_MIN_OBJECT", "smallest allocation tracked as an object (default 64K)"},
    {"--log", "SENTINEL_LOG", "trace | debug | info | warn | error | off (default warn)"},
    {"--log-file", "SENTINEL_LOG_FILE", "write the log there instead of stderr"},
    {"--stats", "SENTINEL_STATS", "write the JSON statistics there at exit"},
    {"--stack-depth", "SENTINEL_STACK_DEPTH", "frames hashed into a call-site (default 16)"},
    {"--reserve", "SENTINEL_RESERVE", "address space reserved for objects (default 256G)"},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: sentinel run [options] -- PROGRAM [ARGS...]\n\noptions:\n");
  for (const auto& o : kOptions) std::fprintf(out, "  %-16s VALUE  %s (%s)\n", o.option, o.help, o.variable);
  std::fprintf(out,
               "  --lib PATH              libsentinel.so to preload (default: next to this tool)\n"
               "  --quiet                 no summary at the end\n"
               "  -h, --help              this text\n");
}

std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string path(buf);
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::string default_library_path() {
  for (const char* rel : {"/../lib/libsentinel.so", "/../lib/sentinel/libsentinel.so"}) {
    const std::string candidate = executable_dir() + rel;
    char resolved[PATH_MAX];
    if (::realpath(candidate.c_str(), resolved) != nullptr) return resolved;
  }
  return "";
}

int run_main(int argc, char** argv) { return run_program(argc, argv, {}, nullptr); }

int run_program(int argc, char** argv, const EnvList& extra_env,
                const std::function<bool(int, char**, EnvList*)>& extra_option) {
  std::vector<std::pair<std::string, std::string>> env = extra_env;
  std::string lib = default_library_path();
  std::string stats;
  bool quiet = false;
  int i = 1;
  for (; i < argc; ++i) {
    const char* arg = argv[i];
    if (!std::strcmp(arg, "--")) {
      ++i;
      break;
    }
    if (!std::strcmp(arg, "-h") || !std::strcmp(arg, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!std::strcmp(arg, "--quiet")) {
      quiet = true;
      continue;
    }
    if (arg[0] != '-') break;  // the program, without "--"
    if (i + 1 >= argc) {
      std::fprintf(stderr, "sentinel run: %s needs a value\n", arg);
      return 2;
    }
    if (!std::strcmp(arg, "--lib")) {
      lib = argv[++i];
      continue;
    }
    if (extra_option && extra_option(i, argv, &env)) {
      ++i;
      continue;
    }
    bool known = false;
    for (const auto& o : kOptions) {
      if (!std::strcmp(arg, o.option)) {
        env.emplace_back(o.variable, argv[++i]);
        if (!std::strcmp(o.variable, "SENTINEL_STATS")) stats = argv[i];
        known = true;
      }
    }
    if (!known) {
      std::fprintf(stderr, "sentinel run: unknown option '%s'\n", arg);
      usage(stderr);
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "sentinel run: no program given\n");
    usage(stderr);
    return 2;
  }
  if (lib.empty() || ::access(lib.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "sentinel run: cannot find libsentinel.so (looked for '%s'); use --lib\n",
                 lib.c_str());
    return 2;
  }
  char temp_stats[] = "/tmp/sentinel-stats-XXXXXX";
  if (stats.empty() && !quiet) {
    const int fd = ::mkstemp(temp_stats);
    if (fd >= 0) {
      ::close(fd);
      stats = temp_stats;
      env.emplace_back("SENTINEL_STATS", stats);
    }
  }

  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("sentinel run: fork");
    return 2;
  }
  if (child == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::string preload = lib;
    if (const char* old = ::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') preload += std::string(":") + old;
    ::setenv("LD_PRELOAD", preload.c_str(), 1);
    ::execvp(argv[i], argv + i);
    std::fprintf(stderr, "sentinel run: cannot run '%s': %s\n", argv[i], std::strerror(errno));
    ::_exit(127);
  }
  // The terminal's Ctrl-C reaches the child directly; the tool waits to report.
  ::signal(SIGINT, SIG_IGN);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!quiet && !stats.empty()) {
    std::string error;
    if (!print_stats_summary(stats, &error)) std::fprintf(stderr, "sentinel run: %s\n", error.c_str());
  }
  if (stats == temp_stats) ::unlink(temp_stats);
  return code;
}

}  // namespace sentinel::cli
