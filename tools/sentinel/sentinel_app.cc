// The `sentinel` app: every command registered on one CLI11 parser.
#include <cstdio>
#include <string>

#include "commands.h"

namespace sentinel::cli {

void write_command_output(const std::string& out, const std::string& err) {
  if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
  if (!err.empty()) std::fwrite(err.data(), 1, err.size(), stderr);
  std::fflush(stdout);
}

int sentinel_main(int argc, char** argv) {
  CLI::App app{"Sentinel places the data objects of a training program on fast and slow memory.\n"
               "Run `sentinel COMMAND --help` for the options of a command.",
               "sentinel"};
  app.set_version_flag("--version", std::string("sentinel ") + SENTINEL_VERSION, "print the version");
  // An option given twice: the last one wins, in every command (subcommands inherit the default).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.require_subcommand(0, 1);  // none: the help on stderr, exit 2 (below)
  int rc = 0;
  add_run_command(app, &rc);
  add_profile_command(app, &rc);
  add_profile_diff_command(app, &rc);
#ifdef SENTINEL_HAVE_TOPO
  add_topology_command(app, &rc);
#endif
#ifdef SENTINEL_HAVE_PLAN
  add_replay_command(app, &rc);
#endif
#ifdef SENTINEL_HAVE_REPORT
  add_report_command(app, &rc);
#endif
  // The app's own help (App::help() would describe the selected subcommand, i.e. `help`).
  auto top_help = [&app] { return app.get_formatter()->make_help(&app, "sentinel", CLI::AppFormatMode::Normal); };
  app.add_subcommand("help", "this text")->callback([&top_help] {
    std::fputs(top_help().c_str(), stdout);
    std::fflush(stdout);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version: 0
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // the message and a hint
    return 2;     // every usage error
  }
  if (app.get_subcommands().empty()) {
    std::fputs(top_help().c_str(), stderr);
    return 2;
  }
  return rc;
}

}  // namespace sentinel::cli
