// The `sentinel` command-line tool: runs programs under the preload and inspects what it recorded.
// The commands are in the sentinel_commands library (sentinel_app.cc and *_command.cc).
#include "commands.h"

int main(int argc, char** argv) { return sentinel::cli::sentinel_main(argc, argv); }
