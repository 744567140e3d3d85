// `sentinel profile`: records an access profile of a program's first training steps and prints what
// it shows.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "profile/profile_io.h"

namespace sentinel::cli {
namespace {

// Alive for at most this many phases: a temporary.
constexpr uint32_t kShortLivedPhases = 3;

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

std::string lifetime(const ObjectProfile& o, uint32_t period) {
  if (o.persistent) return "whole step (persistent)";
  char buf[64];
  if (o.death_phase >= period) {
    std::snprintf(buf, sizeof buf, "phases %u..%u (into next step)", o.birth_phase, o.death_phase - period);
  } else {
    std::snprintf(buf, sizeof buf, "phases %u..%u", o.birth_phase, o.death_phase);
  }
  return buf;
}

bool alive_in(const ObjectProfile& o, uint32_t phase, uint32_t period) {
  if (o.death_phase < period) return phase >= o.birth_phase && phase <= o.death_phase;
  return phase >= o.birth_phase || phase <= o.death_phase - period;
}

void print_profile_summary(const StepProfile& p, const std::string& path) {
  std::fprintf(stderr, "\n== Sentinel profile: %s ==\n", path.c_str());
  std::fprintf(stderr, "  program            %s\n", p.program.c_str());
  std::fprintf(stderr, "  sampler            %s, %u step(s) profiled\n", p.sampler.c_str(), p.profiled_steps);
  std::fprintf(stderr, "  step               %u allocation events (phases), %.1f ms\n", p.period,
               static_cast<double>(p.step_time_ns) / 1e6);
  uint64_t persistent = 0, local = 0, persistent_bytes = 0;
  for (const auto& o : p.objects) {
    (o.persistent ? persistent : local)++;
    if (o.persistent) persistent_bytes += o.size;
  }
  std::fprintf(stderr, "  objects            %llu allocated per step, %llu persistent (%s)\n",
               static_cast<unsigned long long>(local), static_cast<unsigned long long>(persistent),
               mib(persistent_bytes).c_str());

  // Where memory peaks, and what it is made of.
  uint32_t peak_phase = 0;
  uint64_t peak = 0;
  for (uint32_t ph = 0; ph < p.period; ++ph) {
    uint64_t live = 0;
    for (const auto& o : p.objects)
      if (alive_in(o, ph, p.period)) live += o.size;
    if (live > peak) {
      peak = live;
      peak_phase = ph;
    }
  }
  uint64_t short_bytes = 0, long_bytes = 0, pers_bytes = 0;
  for (const auto& o : p.objects) {
    if (!alive_in(o, peak_phase, p.period)) continue;
    if (o.persistent) pers_bytes += o.size;
    else if (o.lifetime_phases() <= kShortLivedPhases) short_bytes += o.size;
    else long_bytes += o.size;
  }
  if (peak > 0) {
    std::fprintf(stderr, "  peak               %s at phase %u: persistent %.0f%%, long-lived %.0f%%, short-lived "
                 "(<= %u phases) %.0f%%\n",
                 mib(peak).c_str(), peak_phase, 100.0 * pers_bytes / peak, 100.0 * long_bytes / peak,
                 kShortLivedPhases, 100.0 * short_bytes / peak);
  }
  uint64_t short_count = 0;
  for (const auto& o : p.objects) short_count += !o.persistent && o.lifetime_phases() <= kShortLivedPhases;
  std::fprintf(stderr, "  short-lived        %llu of %llu step objects\n", static_cast<unsigned long long>(short_count),
               static_cast<unsigned long long>(local));

  std::vector<const ObjectProfile*> by_size;
  for (const auto& o : p.objects) by_size.push_back(&o);
  std::vector<const ObjectProfile*> by_heat = by_size;
  std::stable_sort(by_size.begin(), by_size.end(), [](auto* a, auto* b) { return a->size > b->size; });
  std::stable_sort(by_heat.begin(), by_heat.end(), [](auto* a, auto* b) {
    return static_cast<double>(a->total_accesses()) / a->size > static_cast<double>(b->total_accesses()) / b->size;
  });
  auto print = [&](const char* title, const std::vector<const ObjectProfile*>& list) {
    std::fprintf(stderr, "  %s\n", title);
    for (size_t i = 0; i < list.size() && i < 5; ++i) {
      const ObjectProfile& o = *list[i];
      std::string phases;
      for (size_t k = 0; k < o.accesses.size() && k < 8; ++k) phases += (k ? "," : "") + std::to_string(o.accesses[k].phase);
      if (o.accesses.size() > 8) phases += ",...";
      std::fprintf(stderr, "    %-10s %-34s accesses %-10llu in phases [%s]\n", mib(o.size).c_str(),
                   lifetime(o, p.period).c_str(), static_cast<unsigned long long>(o.total_accesses()), phases.c_str());
    }
  };
  print("largest objects:", by_size);
  print("hottest objects (accesses per byte):", by_heat);
}

}  // namespace

void add_profile_command(CLI::App& app, int* rc) {
  struct Options {
    RunOptions run;
    std::string out;
    EnvList env;  // from the profile-only options
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("profile", "record an access profile of a program's first steps");
  cmd->add_option("--out", o->out, "profile file (default sentinel-profile.json; SENTINEL_PROFILE_OUT)")
      ->type_name("FILE");
  struct Map {
    const char* opt;
    const char* var;
    const char* help;
  };
  static const Map kMap[] = {{"--warmup", "SENTINEL_WARMUP_STEPS", "steps skipped after detection (default 1)"},
                             {"--steps", "SENTINEL_PROFILE_STEPS", "steps profiled (default 2)"},
                             {"--sample-period", "SENTINEL_SAMPLE_PERIOD", "PMU events per sample"}};
  for (const Map& m : kMap) {
    const std::string var = m.var;
    cmd->add_option_function<std::string>(
           m.opt, [o, var](const std::string& v) { o->env.emplace_back(var, v); },
           std::string(m.help) + " (" + m.var + ")")
        ->type_name("N");
  }
  add_run_options(cmd, &o->run);
  cmd->footer("Runs PROGRAM under Sentinel in profile mode and prints a summary of the profile.\n"
              "Takes every option of `sentinel run` too.");
  cmd->callback([o, rc] {
    // The profile path this run writes: --out, else SENTINEL_PROFILE_OUT from the environment, else the
    // preload's default. A stale profile must not pass for this run's: remove the file this run is going
    // to write, and only that one (another profile at the default path is left alone when --out names a
    // different one).
    std::string out = o->out;
    if (out.empty()) {
      const char* env = std::getenv("SENTINEL_PROFILE_OUT");
      out = env != nullptr && *env != '\0' ? env : "sentinel-profile.json";
    }
    if (std::remove(out.c_str()) != 0 && errno != ENOENT) {
      std::fprintf(stderr, "sentinel profile: cannot remove the old profile '%s': %s\n", out.c_str(),
                   std::strerror(errno));
      *rc = 2;
      return;
    }
    // The preload writes where this command reads, whatever the environment says.
    RunOptions run = o->run;
    run.env.insert(run.env.end(), o->env.begin(), o->env.end());
    const int code = run_program(run, {{"SENTINEL_MODE", "profile"}, {"SENTINEL_PROFILE_OUT", out}});
    StepProfile profile;
    std::string error;
    if (!read_profile_file(out, &profile, &error)) {
      std::fprintf(stderr, "sentinel profile: no profile recorded (%s). Did the program run %s?\n", error.c_str(),
                   "enough steps (warm-up + profiled + 1)");
      *rc = code != 0 ? code : 1;
      return;
    }
    print_profile_summary(profile, out);
    *rc = code;
  });
}

}  // namespace sentinel::cli
