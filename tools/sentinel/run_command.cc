// `sentinel run`: maps options to SENTINEL_* variables, preloads libsentinel.so, runs the program,
// and prints what Sentinel saw.
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/config.h"
#include "core/live_status.h"
#include "status_line.h"
#ifdef SENTINEL_HAVE_TOPO
#include "topo/topology.h"
#endif

namespace sentinel::cli {
namespace {

// The variables the runtime reads, for the end of `sentinel run --help`.
std::string variables_help() {
  std::string text =
      "With --fast-budget and no --mode, a machine with a slow memory node (or --dry-run) runs managed mode\n"
      "(objects move along a plan every step); with one node it runs track mode.\n\nEvery variable the runtime reads:\n";
  for (size_t i = 0; i < config_variable_count(); ++i) {
    const ConfigVariable& v = config_variable(i);
    text += std::string("  ") + v.name + ": " + v.meaning + ". Accepted: " + v.values + ". Default: " +
            v.default_text + ".\n";
  }
  return text;
}

// Whether this machine (as the runtime would see it) has a slow node, for picking managed mode.
bool machine_is_tiered(const EnvList& env) {
#ifdef SENTINEL_HAVE_TOPO
  Config config;
  EnvList merged = env;
  auto lookup = [](const char* name, void* ctx) -> const char* {
    for (const auto& [k, v] : *static_cast<EnvList*>(ctx))
      if (k == name) return v.c_str();
    return ::getenv(name);
  };
  if (!parse_config(lookup, &merged, &config).is_ok()) return false;
  topo::Topology topology;
  std::string error;
  return topo::detect_topology(topo::options_from_config(config), &topology, &error) && topology.tiered();
#else
  (void)env;
  return false;
#endif
}

// SENTINEL_DRY_RUN=1 (--dry-run, or in the environment): the slow node is simulated.
bool dry_run(const EnvList& env) {
  for (const auto& [k, v] : env)
    if (k == "SENTINEL_DRY_RUN") return v == "1";
  const char* v = ::getenv("SENTINEL_DRY_RUN");
  return v != nullptr && std::strcmp(v, "1") == 0;
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

// Waits for the child, redrawing the status line from the status file four times a second; the line is
// gone when this returns.
void wait_with_status_line(pid_t child, const char* status_path, int* status) {
  StatusLine line(STDERR_FILENO);
  for (;;) {
    const pid_t r = ::waitpid(child, status, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;
    LiveStatus s;
    if (read_live_status(status_path, &s)) line.draw(s);
    struct timespec pause = {0, 250'000'000};
    ::nanosleep(&pause, nullptr);
  }
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

void add_run_options(CLI::App* cmd, RunOptions* options) {
  // Every option maps to one SENTINEL_* variable of the runtime's configuration table (core/config.h);
  // values are checked by the runtime itself, which names the variable and the accepted values.
  for (size_t i = 0; i < config_variable_count(); ++i) {
    const ConfigVariable& v = config_variable(i);
    if (v.cli_option == nullptr) continue;
    const std::string name = v.name;
    cmd->add_option_function<std::string>(
           v.cli_option, [options, name](const std::string& value) { options->env.emplace_back(name, value); },
           std::string(v.meaning) + " (" + v.name + "; default " + v.default_text + ")")
        ->type_name("VALUE");
  }
  cmd->add_option("--lib", options->lib, "libsentinel.so to preload (default: next to this tool)")->type_name("PATH");
  cmd->add_flag("--quiet", options->quiet, "no summary at the end");
  cmd->add_flag_callback(
      "--dry-run", [options] { options->env.emplace_back("SENTINEL_DRY_RUN", "1"); },
      "simulate the slow node from the tier model (--tier) and book binds and moves instead of making them: "
      "managed mode on a machine without a slow node (SENTINEL_DRY_RUN=1)");
  cmd->add_option("PROGRAM", options->program, "the program and its arguments (after \"--\" or the first word "
                                               "that is not an option)")
      ->required();
  cmd->positionals_at_end();
}

void add_run_command(CLI::App& app, int* rc) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "run PROGRAM with libsentinel.so preloaded, then print a summary of "
                                            "what Sentinel saw");
  add_run_options(cmd, options.get());
  cmd->footer(variables_help());
  cmd->callback([options, rc] { *rc = run_program(*options, {}); });
}

int run_program(const RunOptions& options, const EnvList& extra_env) {
  EnvList env = extra_env;
  env.insert(env.end(), options.env.begin(), options.env.end());
  const std::string lib = options.lib.empty() ? default_library_path() : options.lib;
  const bool quiet = options.quiet;
  std::string stats;
  for (const auto& [k, v] : env)
    if (k == "SENTINEL_STATS") stats = v;
  auto has = [&](const char* name) {
    for (const auto& kv : env)
      if (kv.first == name) return true;
    return ::getenv(name) != nullptr;
  };
  if (has("SENTINEL_FAST_BUDGET") && !has("SENTINEL_MODE")) {
    const bool tiered = dry_run(env) || machine_is_tiered(env);
    env.emplace_back("SENTINEL_MODE", tiered ? "managed" : "track");
    if (!quiet && !tiered) {
      std::fprintf(stderr, "sentinel run: one memory node here: nothing to move, running track mode "
                           "(--dry-run simulates a slow node)\n");
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

  // On a terminal, the runtime publishes its live status to a file this process draws from.
  const bool live = !quiet && ::isatty(STDERR_FILENO) == 1;
  char status_path[] = "/tmp/sentinel-status-XXXXXX";
  bool have_status = false;
  if (live) {
    const int fd = ::mkstemp(status_path);
    if (fd >= 0) {
      ::close(fd);
      have_status = true;
      env.emplace_back("SENTINEL_STATUS", status_path);
    }
  }

  std::vector<char*> argv;
  for (const std::string& a : options.program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
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
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "sentinel run: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  // The terminal's Ctrl-C reaches the child directly; the tool waits to report.
  ::signal(SIGINT, SIG_IGN);
  int status = 0;
  if (have_status) {
    wait_with_status_line(child, status_path, &status);
    ::unlink(status_path);
  } else {
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
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
