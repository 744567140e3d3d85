// Profile accuracy on a known access pattern (issue 4). Runs tests/profile_e2e/known_pattern under
// libsentinel.so in profile mode (software sampler) in several configurations, scores each recorded
// profile against the program's truth (pattern_score.h: precision and recall of the (object, phase)
// pairs with accesses) and prints the figures. Not a test: no limits.
//
//   profile_accuracy [--runs N] [--lib PATH] [--program PATH] [--verbose]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pattern_score.h"
#include "profile/profile_io.h"

namespace {

using sentinel::e2e::PatternScore;

struct Config {
  const char* name;
  std::vector<std::string> args;
};

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  bool verbose = false;
  std::string lib = SENTINEL_LIB, program = KNOWN_PATTERN;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--lib") && i + 1 < argc) lib = argv[++i];
    else if (!std::strcmp(argv[i], "--program") && i + 1 < argc) program = argv[++i];
    else if (!std::strcmp(argv[i], "--verbose")) verbose = true;
    else {
      std::fprintf(stderr, "usage: %s [--runs N] [--lib PATH] [--program PATH] [--verbose]\n", argv[0]);
      return 2;
    }
  }
  const std::vector<Config> configs = {
      {"marked steps, 1 ms settle, wait for arm", {"--mark", "--steps", "8", "--sync-arm-ms", "200"}},
      {"marked steps, 1 ms settle", {"--mark", "--steps", "8"}},
      {"marked steps, no settle", {"--mark", "--steps", "8", "--settle-us", "0"}},
      {"detected steps, 1 ms settle, wait for arm", {"--steps", "14", "--sync-arm-ms", "200"}},
      {"3 copies (period 24), marked, wait for arm", {"--mark", "--steps", "8", "--copies", "3", "--sync-arm-ms", "200"}},
      {"3 copies (period 24), detected, 1 ms settle", {"--steps", "16", "--copies", "3"}},
  };
  char dir_template[] = "/tmp/sentinel_accuracyXXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return 1;
  const std::string profile_path = std::string(dir) + "/profile.json";
  std::printf("profile accuracy on known_pattern, software sampler, %d run(s) per configuration\n", runs);
  std::printf("%-46s %9s %9s %9s %9s %9s %8s\n", "configuration", "precision", "recall", "lifetimes", "persist.",
              "extra obj", "random");
  for (const Config& c : configs) {
    std::vector<std::string> truth_argv = {program, "--print-truth"};
    truth_argv.insert(truth_argv.end(), c.args.begin(), c.args.end());
    const auto truth_run = sentinel::e2e::run_program(truth_argv, {});
    sentinel::e2e::Truth truth;
    std::string error;
    if (!sentinel::e2e::parse_truth(truth_run.out, &truth, &error)) {
      std::fprintf(stderr, "%s: %s\n", c.name, error.c_str());
      return 1;
    }
    std::vector<double> precision, recall;
    int lifetimes = 0, persistent = 0, extra = 0, objects = 0;
    double density = 0;
    for (int r = 0; r < runs; ++r) {
      unlink(profile_path.c_str());
      std::vector<std::string> argv_run = {program};
      argv_run.insert(argv_run.end(), c.args.begin(), c.args.end());
      const auto run = sentinel::e2e::run_program(
          argv_run, {"LD_PRELOAD=" + lib, "SENTINEL_MODE=profile", "SENTINEL_PROFILE_OUT=" + profile_path,
                     "SENTINEL_SAMPLER=software", "SENTINEL_WARMUP_STEPS=1", "SENTINEL_PROFILE_STEPS=2",
                     "SENTINEL_LOG=warn"});
      sentinel::StepProfile profile;
      if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0 ||
          !sentinel::read_profile_file(profile_path, &profile, &error)) {
        std::fprintf(stderr, "%s: run failed (status %d): %s\n%s", c.name, run.status, error.c_str(), run.err.c_str());
        return 1;
      }
      const PatternScore s = sentinel::e2e::score_profile(profile, truth);
      precision.push_back(s.precision);
      recall.push_back(s.recall);
      lifetimes += s.lifetimes_right;
      persistent += s.persistent_right;
      extra += s.extra;
      objects += s.objects;
      density = s.density;
      if (verbose) std::printf("--- %s, run %d\n%s", c.name, r + 1, sentinel::e2e::describe(s).c_str());
    }
    std::sort(precision.begin(), precision.end());
    std::sort(recall.begin(), recall.end());
    char p[32], q[32], l[32], m[32];
    std::snprintf(p, sizeof p, "%.2f-%.2f", precision.front(), precision.back());
    std::snprintf(q, sizeof q, "%.2f-%.2f", recall.front(), recall.back());
    std::snprintf(l, sizeof l, "%d/%d", lifetimes, objects);
    std::snprintf(m, sizeof m, "%d/%d", persistent, objects);
    std::printf("%-46s %9s %9s %9s %9s %9.1f %8.2f\n", c.name, p, q, l, m, double(extra) / runs, density);
  }
  std::printf("precision and recall: min-max over runs; lifetimes/persist.: objects right, summed over runs;\n"
              "extra obj: profile objects matching no program object, per run; random: precision of random phase "
              "attribution\n");
  rmdir(dir);
  return 0;
}
