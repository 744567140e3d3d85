// The `sentinel` command-line tool: runs programs under the preload and inspects what it recorded.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#ifdef SENTINEL_HAVE_TOPO
#include "topo/topology_cli.h"
#endif
#ifdef SENTINEL_HAVE_PLAN
#include "plan/replay_cli.h"
#endif

namespace {

// A command that still parses its own arguments: everything after its name goes to main_fn.
void add_passthrough(CLI::App& app, const char* name, const char* help, int (*main_fn)(int, char**), int* rc) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback([cmd, name, main_fn, rc] {
    std::vector<std::string> args = cmd->remaining();
    std::vector<char*> argv;
    std::string self = name;
    argv.push_back(self.data());
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    *rc = main_fn(static_cast<int>(argv.size() - 1), argv.data());
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Sentinel places the data objects of a training program on fast and slow memory.\n"
               "Run `sentinel COMMAND --help` for the options of a command.",
               "sentinel"};
  app.set_version_flag("--version", std::string("sentinel ") + SENTINEL_VERSION, "print the version");
  app.require_subcommand(1);
  int rc = 0;
  add_passthrough(app, "run", "run PROGRAM with libsentinel.so preloaded, then print a summary of what Sentinel saw",
                  sentinel::cli::run_main, &rc);
  add_passthrough(app, "profile", "record an access profile of a program's first steps", sentinel::cli::profile_main,
                  &rc);
#ifdef SENTINEL_HAVE_TOPO
  add_passthrough(app, "topology", "show the NUMA nodes and the fast/slow choice", sentinel::cli::topology_main, &rc);
#endif
#ifdef SENTINEL_HAVE_PLAN
  add_passthrough(app, "replay", "model a recorded profile under every placement policy", sentinel::cli::replay_main,
                  &rc);
#endif
#ifdef SENTINEL_HAVE_REPORT
  sentinel::cli::add_report_command(app, &rc);
#endif
  app.add_subcommand("help", "this text")->callback([&app] { std::fputs(app.help().c_str(), stdout); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return rc;
}
