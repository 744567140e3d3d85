// Runs the `sentinel` command line inside the test process (sentinel_main, the executable's code) with
// stdout and stderr captured, so that the tests see exactly what a user sees.
#pragma once

#include <string>
#include <vector>

namespace sentinel::test {

// args: everything after "sentinel". Returns the exit status.
int run_sentinel(const std::vector<std::string>& args, std::string* out, std::string* err);

}  // namespace sentinel::test
