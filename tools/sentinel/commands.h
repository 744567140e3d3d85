// The commands of the `sentinel` tool: one CLI11 app (sentinel_app.cc) with one subcommand per
// *_command.cc. Each add_*_command registers its subcommand on the app; when the command runs, its
// exit status goes to *rc (0 success, 1 failure, 2 usage error; `run` and `profile`: the program's).
//
// Thread safety: the commands run on the main thread; they write to stdout and stderr.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace sentinel::cli {

// Parses argv like the `sentinel` executable and runs the command; returns the exit status.
int sentinel_main(int argc, char** argv);

void add_run_command(CLI::App& app, int* rc);
void add_profile_command(CLI::App& app, int* rc);
void add_topology_command(CLI::App& app, int* rc);
void add_replay_command(CLI::App& app, int* rc);
void add_report_command(CLI::App& app, int* rc);
void add_profile_diff_command(CLI::App& app, int* rc);

// What a command that builds its whole output first prints: `out` to stdout, `err` to stderr.
void write_command_output(const std::string& out, const std::string& err);

// What `sentinel run` and `sentinel profile` take: SENTINEL_* variables from their options (in the order
// given), the library, --quiet, and the program with its arguments.
using EnvList = std::vector<std::pair<std::string, std::string>>;
struct RunOptions {
  EnvList env;
  std::string lib;                   // "" : default_library_path()
  bool quiet = false;
  std::vector<std::string> program;  // PROGRAM ARGS...
};

// Adds the options every run takes: one per configuration variable that has a `sentinel run` option
// (core/config.h), --lib, --quiet, and PROGRAM ARGS... (everything from the program on, with or without "--").
void add_run_options(CLI::App* cmd, RunOptions* options);

// Runs the program under the preload with extra_env, then options.env, set; prints the stats summary
// unless quiet; returns the program's exit code (2 when it cannot be started).
int run_program(const RunOptions& options, const EnvList& extra_env);

// Reads a SENTINEL_STATS file and prints a human-readable summary to stderr. Returns false (with a
// message) when the file is missing or malformed.
bool print_stats_summary(const std::string& path, std::string* error);

// Path of libsentinel.so next to this executable (../lib/libsentinel.so), or "" if not found.
std::string default_library_path();

}  // namespace sentinel::cli
