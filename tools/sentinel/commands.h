// Subcommands of the `sentinel` tool. Each takes argv starting at its own name.
#pragma once

#include <string>

namespace sentinel::cli {

int run_main(int argc, char** argv);

// Reads a SENTINEL_STATS file and prints a human-readable summary to stderr. Returns false (with a
// message) when the file is missing or malformed.
bool print_stats_summary(const std::string& path, std::string* error);

// Path of libsentinel.so next to this executable (../lib/libsentinel.so), or "" if not found.
std::string default_library_path();

}  // namespace sentinel::cli
