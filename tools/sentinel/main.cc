// The `sentinel` command-line tool: runs programs under the preload and inspects what it recorded.
#include <cstdio>
#include <cstring>

#include "commands.h"
#ifdef SENTINEL_HAVE_TOPO
#include "topo/topology_cli.h"
#endif
#ifdef SENTINEL_HAVE_PLAN
#include "plan/replay_cli.h"
#endif

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: sentinel COMMAND [options] [-- program args...]\n"
               "\n"
               "Sentinel places the data objects of a training program on fast and slow memory.\n"
               "\n"
               "commands:\n"
               "  run [options] -- PROGRAM ARGS...   run PROGRAM with libsentinel.so preloaded, then\n"
               "                                     print a summary of what Sentinel saw\n"
               "  profile [options] -- PROGRAM ...   record an access profile of its first steps\n"
#ifdef SENTINEL_HAVE_TOPO
               "  topology [--json]                  show the NUMA nodes and the fast/slow choice\n"
#endif
#ifdef SENTINEL_HAVE_PLAN
               "  replay PROFILE [options]           model a recorded profile under every policy\n"
#endif
               "  help                               this text\n"
               "  --version                          print the version\n"
               "\n"
               "Run `sentinel COMMAND --help` for the options of a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char* cmd = argv[1];
  if (!std::strcmp(cmd, "help") || !std::strcmp(cmd, "--help") || !std::strcmp(cmd, "-h")) {
    usage(stdout);
    return 0;
  }
  if (!std::strcmp(cmd, "--version") || !std::strcmp(cmd, "version")) {
    std::printf("sentinel %s\n", SENTINEL_VERSION);
    return 0;
  }
  if (!std::strcmp(cmd, "run")) return sentinel::cli::run_main(argc - 1, argv + 1);
  if (!std::strcmp(cmd, "profile")) return sentinel::cli::profile_main(argc - 1, argv + 1);
#ifdef SENTINEL_HAVE_TOPO
  if (!std::strcmp(cmd, "topology")) return sentinel::cli::topology_main(argc - 1, argv + 1);
#endif
#ifdef SENTINEL_HAVE_PLAN
  if (!std::strcmp(cmd, "replay")) return sentinel::cli::replay_main(argc - 1, argv + 1);
#endif
  std::fprintf(stderr, "sentinel: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
