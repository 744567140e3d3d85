// pmu_truth_check: the checks of the emulated PMU's guest test (tests/guest/pmu_truth.sh).
//
//   pmu_truth_check truth SCHEDULE PROFILE STATS
//       SCHEDULE is `pmu_pattern --print-truth`; PROFILE and STATS come from pmu_pattern run with
//       SENTINEL_SAMPLER=pebs SENTINEL_SAMPLE_PERIOD=1 under the slow-tier plugin. Checks that the
//       samples came from the emulator and none were lost, and that each buffer's misses and
//       write-backs per step are its passes times its lines, in the phases of its passes.
//   pmu_truth_check managed STATS
//       a managed run with SENTINEL_PROFILE_IN: it planned from that profile and ran managed steps.
//
// Tolerance: with buffers four times the cache model every pass misses every line once, so the
// counts are exact but for the lines at the edges of the profile (a step's first pass may find at
// most one cache of lines still there from the step before; write-backs of a step's last write pass
// fall in the next step, where the previous step's fall in this one): 2% of a buffer's expected count.
// Phases: at least 98% of a buffer's misses must be in the phases of its own passes (write-backs come
// one phase late, when the next pass evicts the lines, and are not checked by phase).
// Exit 1 with every failed check printed.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/profile_io.h"

namespace {

struct Buffer {
  std::string name;
  uint32_t occurrence = 0;
  uint64_t reads = 0, writes = 0;  // passes of each kind
  std::set<uint32_t> phases;
};

int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

bool near(double got, double want, double tolerance) { return std::fabs(got - want) <= tolerance; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

int check_truth(const std::string& schedule_path, const std::string& profile_path, const std::string& stats_path) {
  std::ifstream in(schedule_path);
  uint64_t lines = 0;
  uint32_t period = 0;
  std::vector<Buffer> buffers;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::string word;
    s >> word;
    if (word == "lines") s >> lines;
    if (word == "period") s >> period;
    if (word != "buffer") continue;
    Buffer b;
    std::string k;
    uint64_t passes = 0;
    s >> b.name >> k >> b.occurrence >> k >> passes >> k >> b.reads >> k >> b.writes >> k;
    for (uint32_t ph; s >> ph;) b.phases.insert(ph);
    buffers.push_back(b);
  }
  if (lines == 0 || buffers.size() != 5) {
    std::printf("FAIL cannot read the schedule %s\n", schedule_path.c_str());
    return 1;
  }
  sentinel::StepProfile p;
  std::string error;
  if (!sentinel::read_profile_file(profile_path, &p, &error)) {
    std::printf("FAIL %s\n", error.c_str());
    return 1;
  }
  const nlohmann::json stats = read_json(stats_path);
  expect(p.sampler == "pebs", "profile sampler is \"pebs\" (" + p.sampler + ")");
  expect(p.sampler_source == "qemu-slowtier", "profile sampler_source is qemu-slowtier (" + p.sampler_source + ")");
  expect(p.sample_period == 1, "sample period 1");
  expect(p.samples_lost == 0, "no sample lost (" + std::to_string(p.samples_lost) + ")");
  expect(p.writebacks_counted, "the profile counts write-backs");
  expect(p.period == period, "period " + std::to_string(p.period) + " == " + std::to_string(period));
  expect(stats.is_object() && stats.value("sampler", "") == "pebs", "stats: sampler pebs");
  expect(stats.is_object() && stats.value("sampler_source", "") == "qemu-slowtier", "stats: sampler_source qemu-slowtier");
  expect(stats.is_object() && stats.value("samples_lost", 1) == 0, "stats: samples_lost 0");

  const double tol = 0.02 * static_cast<double>(lines);
  const sentinel::ObjectProfile* hottest = nullptr;
  double b1_misses = 0;
  std::vector<double> misses_of(buffers.size(), -1);
  for (const sentinel::ObjectProfile& o : p.objects) {
    if (hottest == nullptr || o.total_accesses() > hottest->total_accesses()) hottest = &o;
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const sentinel::ObjectProfile* o = nullptr;
    for (const auto& x : p.objects) {
      if (x.persistent && x.occurrence == b.occurrence && x.size == lines * 64) o = &x;
    }
    expect(o != nullptr, b.name + " is in the profile (persistent, occurrence " + std::to_string(b.occurrence) + ")");
    if (o == nullptr) continue;
    uint64_t r = 0, w = 0, wb = 0, in_own = 0;
    for (const auto& a : o->accesses) {
      r += a.reads, w += a.writes, wb += a.writebacks;
      if (b.phases.count(a.phase)) in_own += a.reads + a.writes;
    }
    char line[256];
    std::snprintf(line, sizeof line, "%s: reads %llu (want %llu), writes %llu (want %llu), write-backs %llu (want %llu)",
                  b.name.c_str(), (unsigned long long)r, (unsigned long long)(b.reads * lines), (unsigned long long)w,
                  (unsigned long long)(b.writes * lines), (unsigned long long)wb, (unsigned long long)(b.writes * lines));
    expect(near(r, b.reads * lines, tol) && near(w, b.writes * lines, tol) && near(wb, b.writes * lines, tol), line);
    misses_of[i] = static_cast<double>(r + w);
    if (b.reads + b.writes == 1) b1_misses = static_cast<double>(r + w);
    if (r + w > 0) {
      std::snprintf(line, sizeof line, "%s: %.1f%% of its misses in the phases of its passes", b.name.c_str(),
                    100.0 * static_cast<double>(in_own) / static_cast<double>(r + w));
      expect(static_cast<double>(in_own) >= 0.98 * static_cast<double>(r + w), line);
    }
  }
  expect(hottest != nullptr && hottest->persistent && hottest->occurrence == buffers[0].occurrence &&
             hottest->size == lines * 64,
         "the hottest object is " + buffers[0].name + ", the buffer with the most passes");
  for (size_t i = 0; i + 1 < buffers.size() && b1_misses > 0; ++i) {
    const double want = static_cast<double>(buffers[i].reads + buffers[i].writes);
    char line[160];
    std::snprintf(line, sizeof line, "%s / B1 misses: %.3f (want %.0f)", buffers[i].name.c_str(), misses_of[i] / b1_misses, want);
    expect(near(misses_of[i] / b1_misses, want, 0.02 * want + 0.02), line);
  }
  return failures == 0 ? 0 : 1;
}

int check_managed(const std::string& stats_path) {
  const nlohmann::json stats = read_json(stats_path);
  expect(stats.is_object(), "managed stats readable");
  if (!stats.is_object()) return 1;
  expect(stats.value("profile_source", "") == "SENTINEL_PROFILE_IN",
         "managed mode planned from SENTINEL_PROFILE_IN (" + stats.value("profile_source", "?") + ")");
  expect(stats.value("managed_steps", 0) > 0, "managed steps ran (" + std::to_string(stats.value("managed_steps", 0)) + ")");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "truth" && argc == 5) return check_truth(argv[2], argv[3], argv[4]);
  if (mode == "managed" && argc == 3) return check_managed(argv[2]);
  std::fprintf(stderr, "usage: %s truth SCHEDULE PROFILE STATS | managed STATS\n", argv[0]);
  return 2;
}
