#include "pattern_score.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "profile/profile_io.h"

extern char** environ;

namespace sentinel::e2e {
namespace {

bool alive(const TruthObject& o, uint32_t phase, uint32_t period) {
  if (o.persistent) return true;
  if (o.death < period) return phase >= o.birth && phase <= o.death;
  return phase >= o.birth || phase <= o.death - period;
}

std::string read_all(const std::string& path) {
  std::string text;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

}  // namespace

bool parse_truth(std::string_view text, Truth* out, std::string* error) {
  *out = Truth{};
  std::istringstream in{std::string(text)};
  std::string line;
  std::map<std::string, size_t> index;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "period") {
      ls >> out->period;
    } else if (kind == "object") {
      TruthObject o;
      std::string k1, k2, k3, k4, k5;
      int persistent = 0;
      ls >> o.name >> k1 >> o.size >> k2 >> persistent >> k3 >> o.birth >> k4 >> o.death;
      if (!ls || k1 != "size" || k2 != "persistent" || k3 != "birth" || k4 != "death") {
        *error = "malformed object line: " + line;
        return false;
      }
      o.persistent = persistent != 0;
      index[o.name] = out->objects.size();
      out->objects.push_back(o);
    } else if (kind == "use") {
      std::string name, mode;
      uint32_t phase = 0;
      ls >> name >> phase >> mode;
      auto it = index.find(name);
      if (!ls || it == index.end()) {
        *error = "malformed use line: " + line;
        return false;
      }
      out->objects[it->second].uses[phase] = mode;
    } else if (!kind.empty()) {
      *error = "unknown line: " + line;
      return false;
    }
  }
  if (out->period == 0 || out->objects.empty()) {
    *error = "no period or no objects";
    return false;
  }
  return true;
}

namespace {

Truth rotated(const Truth& truth, uint32_t r) {
  Truth t = truth;
  const uint32_t P = truth.period;
  for (TruthObject& o : t.objects) {
    std::map<uint32_t, std::string> uses;
    for (const auto& [phase, mode] : o.uses) uses[(phase + r) % P] = mode;
    o.uses = uses;
    if (o.persistent) continue;
    const uint32_t length = o.death - o.birth;
    o.birth = (o.birth + r) % P;
    o.death = o.birth + length;
  }
  return t;
}

// Where the profile's step begins on the program's step clock: the rotation that makes the most
// step-local objects (matched by size) start at the right phase.
uint32_t best_rotation(const StepProfile& p, const Truth& truth) {
  uint32_t best = 0;
  int best_hits = -1;
  for (uint32_t r = 0; r < truth.period; ++r) {
    int hits = 0;
    for (const TruthObject& t : truth.objects) {
      if (t.persistent) continue;
      for (const ObjectProfile& o : p.objects) {
        if (o.size == t.size && !o.persistent && o.birth_phase == (t.birth + r) % truth.period) ++hits;
      }
    }
    if (hits > best_hits) best = r, best_hits = hits;
  }
  return best;
}

}  // namespace

PatternScore score_profile(const StepProfile& p, const Truth& unrotated) {
  PatternScore s;
  s.rotation = p.period == unrotated.period ? best_rotation(p, unrotated) : 0;
  const Truth truth = rotated(unrotated, s.rotation);
  s.period_expected = truth.period;
  s.period_got = p.period;
  s.objects = static_cast<int>(truth.objects.size());
  std::set<size_t> used;  // indices of matched profile objects
  int alive_pairs = 0, true_pairs = 0;
  for (const TruthObject& t : truth.objects) {
    for (uint32_t ph = 0; ph < truth.period; ++ph) alive_pairs += alive(t, ph, truth.period) ? 1 : 0;
    true_pairs += static_cast<int>(t.uses.size());
    // The profile object of the same size; with several (a phantom beside the real one), the one whose
    // persistent flag agrees.
    const ObjectProfile* match = nullptr;
    size_t match_index = 0;
    for (size_t i = 0; i < p.objects.size(); ++i) {
      if (p.objects[i].size != t.size || used.count(i) != 0) continue;
      if (match == nullptr || (p.objects[i].persistent == t.persistent && match->persistent != t.persistent)) {
        match = &p.objects[i];
        match_index = i;
      }
    }
    if (match == nullptr) {
      ++s.missing;
      s.fn += static_cast<int>(t.uses.size());
      s.notes.push_back(t.name + ": not in the profile");
      continue;
    }
    used.insert(match_index);
    ++s.matched;
    if (match->persistent == t.persistent) {
      ++s.persistent_right;
    } else {
      s.notes.push_back(t.name + ": persistent " + (match->persistent ? "true" : "false") + ", expected " +
                        (t.persistent ? "true" : "false"));
    }
    if (match->birth_phase == t.birth && match->death_phase == t.death) {
      ++s.lifetimes_right;
    } else {
      s.notes.push_back(t.name + ": lifetime " + std::to_string(match->birth_phase) + ".." +
                        std::to_string(match->death_phase) + ", expected " + std::to_string(t.birth) + ".." +
                        std::to_string(t.death));
    }
    std::set<uint32_t> reported;
    for (const PhaseAccess& a : match->accesses) {
      if (a.total() == 0) continue;
      reported.insert(a.phase);
      if (t.uses.count(a.phase) != 0) {
        ++s.tp;
      } else {
        ++s.fp;
        s.notes.push_back(t.name + ": accesses reported in phase " + std::to_string(a.phase) + " (not touched there)");
      }
      auto u = t.uses.find(a.phase);
      if (u != t.uses.end() && u->second == "w" && a.writes > a.reads) ++s.writes_seen;
    }
    for (const auto& [phase, mode] : t.uses) {
      if (mode == "w") ++s.write_pairs;
      if (reported.count(phase) == 0) {
        ++s.fn;
        s.notes.push_back(t.name + ": no accesses reported in phase " + std::to_string(phase) + " (touched: " + mode + ")");
      }
    }
    if (t.uses.empty()) {
      ++s.cold_objects;
      if (reported.empty()) ++s.cold_clean;
    }
  }
  for (size_t i = 0; i < p.objects.size(); ++i) {
    if (used.count(i) != 0) continue;
    ++s.extra;
    const ObjectProfile& o = p.objects[i];
    int pairs = 0;
    for (const PhaseAccess& a : o.accesses) pairs += a.total() > 0 ? 1 : 0;
    s.fp += pairs;
    s.notes.push_back("extra profile object of size " + std::to_string(o.size) + (o.persistent ? " (persistent)" : "") +
                      " lifetime " + std::to_string(o.birth_phase) + ".." + std::to_string(o.death_phase) + ", " +
                      std::to_string(pairs) + " phase(s) with accesses");
  }
  s.precision = s.tp + s.fp == 0 ? 0.0 : static_cast<double>(s.tp) / (s.tp + s.fp);
  s.recall = s.tp + s.fn == 0 ? 0.0 : static_cast<double>(s.tp) / (s.tp + s.fn);
  s.density = alive_pairs == 0 ? 0.0 : static_cast<double>(true_pairs) / alive_pairs;
  return s;
}

std::string describe(const PatternScore& s) {
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "period %u (expected %u), profile step begins at program event %u; objects %d: matched %d, missing %d, extra in profile %d; persistent flag "
                "right %d/%d; lifetimes right %d/%d\n(object, phase) pairs: tp %d fp %d fn %d; precision %.3f recall "
                "%.3f (random attribution would score precision ~%.2f)\nwrite-first pairs seen as writes %d/%d; "
                "cold objects without accesses %d/%d\n",
                s.period_got, s.period_expected, (s.period_expected - s.rotation) % (s.period_expected ? s.period_expected : 1), s.objects, s.matched, s.missing, s.extra, s.persistent_right,
                s.matched, s.lifetimes_right, s.matched, s.tp, s.fp, s.fn, s.precision, s.recall, s.density,
                s.writes_seen, s.write_pairs, s.cold_clean, s.cold_objects);
  std::string text = buf;
  for (const std::string& n : s.notes) text += "  " + n + "\n";
  return text;
}

RunResult run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  RunResult r;
  char out_path[] = "/tmp/sentinel_e2e_outXXXXXX";
  char err_path[] = "/tmp/sentinel_e2e_errXXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) return r;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0 || std::strncmp(*e, "SENTINEL_", 9) == 0) continue;
    env_strings.emplace_back(*e);
  }
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp, args;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  if (pid > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.status = status;
  }
  r.out = read_all(out_path);
  r.err = read_all(err_path);
  unlink(out_path);
  unlink(err_path);
  return r;
}

std::map<int, long> protected_pages_by_step(const std::string& err) {
  std::map<int, long> pages;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    int step = 0;
    long n = 0;
    if (std::sscanf(line.c_str(), "kp: maps step %d protected_pages %ld", &step, &n) == 2) pages[step] = n;
  }
  return pages;
}

int first_step_with_period(const std::string& err) {
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    int step = 0;
    long long sentinel_step = 0;
    unsigned period = 0;
    if (std::sscanf(line.c_str(), "kp: step %d sentinel_step %lld period %u", &step, &sentinel_step, &period) == 3 &&
        period > 0) {
      return step;
    }
  }
  return -1;
}

bool profile_with_software_sampler(const std::string& lib, const std::vector<std::string>& argv, RunResult* run,
                                   StepProfile* profile, std::string* error) {
  const std::string path = std::string(P_tmpdir) + "/sentinel_profile_" + std::to_string(getpid()) + ".json";
  *run = run_program(argv, {"LD_PRELOAD=" + lib, "SENTINEL_MODE=profile", "SENTINEL_PROFILE_OUT=" + path,
                            "SENTINEL_SAMPLER=software", "SENTINEL_WARMUP_STEPS=1", "SENTINEL_PROFILE_STEPS=2",
                            "SENTINEL_LOG=warn"});
  if (!WIFEXITED(run->status) || WEXITSTATUS(run->status) != 0) {
    *error = "the program failed: " + run->err;
    return false;
  }
  const bool ok = read_profile_file(path, profile, error);
  unlink(path.c_str());
  return ok;
}

}  // namespace sentinel::e2e
