// `sentinel profile-diff TRUTH OTHER`: scores a profile against a ground-truth profile of the same
// program (src/profile/profile_diff.h has the scores). TRUTH is meant to come from the emulated PMU at
// sample period 1 in the two-node guest: it is refused when its ring lost samples (it would not be a
// truth), and a warning says so when it was recorded otherwise.
// Exit status: 0 success, 1 failure (unreadable profile, a truth with lost samples), 2 usage error.
#include <cstdio>
#include <memory>

#include "commands.h"

#include "profile/profile_diff.h"
#include "profile/profile_io.h"

namespace sentinel::cli {
namespace {

struct DiffRequest {
  std::string truth, other;
  bool json = false, allow_lost = false;
  double hot_percent = 1.0;
  size_t top = 12;
};

std::string describe(const std::string& path, const StepProfile& p) {
  return path + ": " + p.sampler + (p.sampler_source.empty() ? "" : " from " + p.sampler_source) + ", sample period " +
         std::to_string(p.sample_period) + ", " + std::to_string(p.profiled_steps) + " step(s) of " +
         std::to_string(p.period) + " events, " + std::to_string(p.objects.size()) + " objects" +
         (p.samples_lost > 0 ? ", " + std::to_string(p.samples_lost) + " samples lost" : "");
}

int run_diff(const DiffRequest& r, std::string* out, std::string* err) {
  StepProfile truth, other;
  std::string e;
  if (!read_profile_file(r.truth, &truth, &e) || !read_profile_file(r.other, &other, &e)) {
    *err = "profile-diff: " + e + "\n";
    return 1;
  }
  if (truth.samples_lost > 0 && !r.allow_lost) {
    *err = "profile-diff: " + r.truth + " lost " + std::to_string(truth.samples_lost) +
           " samples (its ring overflowed): not a ground truth (SENTINEL_PMU_RING larger, or --allow-lost)\n";
    return 1;
  }
  if (truth.sampler_source != "qemu-slowtier" || truth.sample_period != 1) {
    *err += "profile-diff: warning: " + r.truth +
            " is not an emulated-PMU profile at sample period 1; the scores are against another estimate\n";
  }
  DiffOptions options;
  options.hot_share = r.hot_percent / 100.0;
  ProfileDiff d;
  if (!diff_profiles(truth, other, options, &d, &e)) {
    *err += "profile-diff: " + e + "\n";
    return 1;
  }
  if (r.json) {
    *out = format_diff_json(d);
  } else {
    *out = "# truth " + describe(r.truth, truth) + "\n# other " + describe(r.other, other) + "\n" +
           format_diff_text(d, r.top);
  }
  return 0;
}

}  // namespace

void add_profile_diff_command(CLI::App& app, int* rc) {
  auto r = std::make_shared<DiffRequest>();
  CLI::App* cmd = app.add_subcommand("profile-diff", "score a profile against a ground-truth profile of the same program");
  cmd->add_option("TRUTH", r->truth, "the ground truth: a profile from the emulated PMU at SENTINEL_SAMPLE_PERIOD=1")
      ->required();
  cmd->add_option("OTHER", r->other, "the profile to score (another sampler, another period)")->required();
  cmd->add_flag("--json", r->json, "print the scores and every object as JSON");
  cmd->add_option("--hot", r->hot_percent,
                  "an object is hot above this percentage of the truth's traffic (default 1)")
      ->type_name("PCT")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top", r->top, "objects listed by truth traffic (default 12)")->type_name("N");
  cmd->add_flag("--allow-lost", r->allow_lost, "accept a truth whose ring lost samples");
  cmd->footer(
      "Matches the objects of the two profiles by tag (then, for the rest, by size and lifetime where that is\n"
      "unique) and compares, per object and phase, the bytes (cache lines x 64) of reads, writes and write-backs:\n"
      "  traffic error       sum |other - truth| / sum truth (0 exact; 1 when nothing is reported)\n"
      "  miss traffic error  the same without write-backs (for samplers that cannot see them)\n"
      "  read/write split    mean |write share other - write share truth| over pairs both saw\n"
      "  Spearman            rank correlation of the objects' total traffic\n"
      "  untouched but hot   objects above --hot of the truth's traffic that the other reports untouched\n"
      "A truth whose ring lost samples is refused. Profiles with different periods are compared per object.");
  cmd->callback([r, rc] {
    std::string out, err;
    *rc = run_diff(*r, &out, &err);
    write_command_output(out, err);
  });
}

}  // namespace sentinel::cli
