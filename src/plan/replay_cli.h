// The `sentinel replay` command:
//   sentinel replay PROFILE [--budget 20%|BYTES[K|M|G]] [--tier cxl|optane|...|FILE] [--json]
//                   [--sweep] [--write-plan FILE] [--help]
// PROFILE is a profile file (docs/profile-format.md) or "synthetic[:LAYERS]" for the built-in
// synthetic DNN training step. Prints one row per policy (or the budget sweep); times are modeled.
// Exit status: 0 success, 1 failure (unreadable profile, bad tier file), 2 usage error.
//
// Thread safety: run_replay is reentrant; replay_main writes to stdout/stderr.
#pragma once

#include <string>
#include <vector>

namespace sentinel::cli {

// argv[0] is "replay".
int replay_main(int argc, char** argv);

// The same with arguments after "replay" and captured output (for tests).
int run_replay(const std::vector<std::string>& args, std::string* out, std::string* err);

}  // namespace sentinel::cli
