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
#include "core/config.h"
#ifdef SENTINEL_HAVE_TOPO
#include "topo/topology.h"
#endif

namespace sentinel::cli {
namespace {

// Every option maps to one SENTINEL_* variable of the runtime's configuration table (core/config.h); values
// are checked by the runtime itself, which names the variable and the accepted values.
const ConfigVariable* variable_of_option(const char* option) {
  for (size_t i = 0; i < config_variable_count(); ++i) {
    const ConfigVariable& v = config_variable(i);
    if (v.cli_option != nullptr && !std::strcmp(v.cli_option, option)) return &v;
  }
  return nullptr;
}

void usage(FILE* out) {
  std::fprintf(out, "usage: sentinel run [options] -- PROGRAM [ARGS...]\n\noptions (each sets a SENTINEL_* variable):\n");
  for (size_t i = 0; i < config_variable_count(); ++i) {
    const ConfigVariable& v = config_variable(i);
    if (v.cli_option == nullptr) continue;
    std::fprintf(out, "  %-15s VALUE  %s (%s; default %s)\n", v.cli_option, v.meaning, v.name, v.default_text);
  }
  std::fprintf(out,
               "  --lib PATH             libsentinel.so to preload (default: next to this tool)\n"
               "  --quiet                no summary at the end\n"
               "  -h, --help             this text\n"
               "\nWith --fast-budget and no --mode, a machine with a slow memory node runs managed mode (objects\n"
               "move along a plan every step); with one node it runs track mode.\n"
               "\nEvery variable the runtime reads:\n");
  for (size_t i = 0; i < config_variable_count(); ++i) {
    const ConfigVariable& v = config_variable(i);
    std::fprintf(out, "  %-24s %s. Accepted: %s. Default: %s.\n", v.name, v.meaning, v.values, v.default_text);
  }
}

// Whether this machine (as the runtime would see it) has a slow node, for picking managed mode.
bool machine_is_tiered(const EnvList& env) {
#ifdef SENTINEL_HAVE_TOPO
  Config config;
  char message[512];
  EnvList merged = env;
  auto lookup = [](const char* name, void* ctx) -> const char* {
    for (const auto& [k, v] : *static_cast<EnvList*>(ctx))
      if (k == name) return v.c_str();
    return ::getenv(name);
  };
  if (!parse_config(lookup, &merged, &config, message, sizeof message)) return false;
  topo::Topology topology;
  std::string error;
  return topo::detect_topology(topo::options_from_config(config), &topology, &error) && topology.tiered();
#else
  (void)env;
  return false;
#endif
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
    const ConfigVariable* v = variable_of_option(arg);
    if (v != nullptr) {
      env.emplace_back(v->name, argv[++i]);
      if (!std::strcmp(v->name, "SENTINEL_STATS")) stats = argv[i];
    } else {
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
  auto has = [&](const char* name) {
    for (const auto& kv : env)
      if (kv.first == name) return true;
    return ::getenv(name) != nullptr;
  };
  if (has("SENTINEL_FAST_BUDGET") && !has("SENTINEL_MODE")) {
    const bool tiered = machine_is_tiered(env);
    env.emplace_back("SENTINEL_MODE", tiered ? "managed" : "track");
    if (!quiet && !tiered) {
      std::fprintf(stderr, "sentinel run: one memory node here: nothing to move, running track mode\n");
    }
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
