// Subcommands of the `sentinel` tool. Each takes argv starting at its own name.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sentinel::cli {

int run_main(int argc, char** argv);
int profile_main(int argc, char** argv);
// Registers `sentinel report` (report_command.cc); *rc receives its exit status.
void add_report_command(CLI::App& app, int* rc);


// The engine of `run`: parses run's options from argv[1..], sets extra_env plus the options' variables,
// runs the program under the preload, prints the stats summary, returns the program's exit code.
// extra_option(i, argv, env) may consume an option with its value at argv[i], argv[i+1] and add
// variables to env (returns true).
using EnvList = std::vector<std::pair<std::string, std::string>>;
int run_program(int argc, char** argv, const EnvList& extra_env,
                const std::function<bool(int, char**, EnvList*)>& extra_option);

// Reads a SENTINEL_STATS file and prints a human-readable summary to stderr. Returns false (with a
// message) when the file is missing or malformed.
bool print_stats_summary(const std::string& path, std::string* error);

// Path of libsentinel.so next to this executable (../lib/libsentinel.so), or "" if not found.
std::string default_library_path();

}  // namespace sentinel::cli
