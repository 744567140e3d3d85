// Runs `sentinel replay` without the full CLI: plan_replay PROFILE [options] (see replay_cli.h).
#include "plan/replay_cli.h"

int main(int argc, char** argv) { return sentinel::cli::replay_main(argc, argv); }
