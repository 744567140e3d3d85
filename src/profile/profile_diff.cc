#include "profile/profile_diff.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace sentinel {
namespace {

constexpr uint64_t kLineBytes = 64;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Bytes of one object in one phase (or, phases not compared, over the step).
struct Cell {
  uint64_t read = 0, write = 0, writeback = 0;
};

// The other profile's object matched to each truth object (-1: none), and back.
struct Matching {
  std::vector<int> of_truth, of_other;
  uint32_t by_tag = 0, by_size = 0;
};

Matching match_objects(const StepProfile& t, const StepProfile& o) {
  Matching m;
  m.of_truth.assign(t.objects.size(), -1);
  m.of_other.assign(o.objects.size(), -1);
  std::unordered_map<uint64_t, int> other_by_tag;
  for (size_t i = 0; i < o.objects.size(); ++i) other_by_tag[o.objects[i].tag] = static_cast<int>(i);
  for (size_t i = 0; i < t.objects.size(); ++i) {
    auto it = other_by_tag.find(t.objects[i].tag);
    if (it == other_by_tag.end()) continue;
    m.of_truth[i] = it->second;
    m.of_other[it->second] = static_cast<int>(i);
    ++m.by_tag;
  }
  // Leftovers by size and lifetime, where that key names exactly one object on each side.
  using Key = std::tuple<uint64_t, uint32_t, uint32_t, bool>;
  auto key_of = [](const ObjectProfile& x) { return Key{x.size, x.birth_phase, x.death_phase, x.persistent}; };
  std::map<Key, std::vector<int>> left_truth, left_other;
  for (size_t i = 0; i < t.objects.size(); ++i) {
    if (m.of_truth[i] < 0) left_truth[key_of(t.objects[i])].push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < o.objects.size(); ++i) {
    if (m.of_other[i] < 0) left_other[key_of(o.objects[i])].push_back(static_cast<int>(i));
  }
  for (const auto& [k, ts] : left_truth) {
    auto it = left_other.find(k);
    if (ts.size() != 1 || it == left_other.end() || it->second.size() != 1) continue;
    m.of_truth[ts[0]] = it->second[0];
    m.of_other[it->second[0]] = ts[0];
    ++m.by_size;
  }
  return m;
}

// Phase -> bytes of one object (a single entry, phase 0, when phases are not compared).
std::map<uint32_t, Cell> cells_of(const ObjectProfile& x, bool by_phase, bool writebacks) {
  std::map<uint32_t, Cell> cells;
  for (const PhaseAccess& a : x.accesses) {
    Cell& c = cells[by_phase ? a.phase : 0];
    c.read += a.reads * kLineBytes;
    c.write += a.writes * kLineBytes;
    if (writebacks) c.writeback += a.writebacks * kLineBytes;
  }
  return cells;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016" PRIx64, v);
  return b;
}

std::string kib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / 1024);
  return b;
}

std::string score(double v) {
  if (std::isnan(v)) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

}  // namespace

double spearman_rank_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2 || y.size() != n) return kNaN;
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[idx[k]] = (static_cast<double>(i + j) / 2.0) + 1.0;
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += rx[i], my += ry[i];
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  if (sxx == 0 || syy == 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

bool diff_profiles(const StepProfile& truth, const StepProfile& other, const DiffOptions& options, ProfileDiff* out,
                   std::string* error) {
  if (truth.objects.empty()) {
    if (error != nullptr) *error = "the truth has no objects";
    return false;
  }
  ProfileDiff d;
  d.phases_compared = truth.period == other.period;
  d.truth_counts_writebacks = truth.writebacks_counted;
  const bool wb = truth.writebacks_counted;  // write-backs count only when the truth knows them
  const Matching m = match_objects(truth, other);
  d.matched_by_tag = m.by_tag;
  d.matched_by_size = m.by_size;
  double err = 0, miss_err = 0, split_weighted = 0, split_weight = 0;
  uint64_t truth_writes = 0, other_writes = 0;
  std::vector<double> hot_truth, hot_other;
  for (size_t i = 0; i < truth.objects.size(); ++i) {
    const ObjectProfile& t = truth.objects[i];
    const ObjectProfile* o = m.of_truth[i] >= 0 ? &other.objects[static_cast<size_t>(m.of_truth[i])] : nullptr;
    ObjectDiff od;
    od.tag = t.tag;
    od.size = t.size;
    od.persistent = t.persistent;
    od.in_truth = true;
    od.in_other = o != nullptr;
    od.matched_by_size = o != nullptr && o->tag != t.tag;
    if (o == nullptr) ++d.truth_only;
    std::map<uint32_t, Cell> tc = cells_of(t, d.phases_compared, wb);
    std::map<uint32_t, Cell> oc = o != nullptr ? cells_of(*o, d.phases_compared, wb) : std::map<uint32_t, Cell>{};
    std::map<uint32_t, std::pair<Cell, Cell>> pairs;
    for (const auto& [ph, c] : tc) pairs[ph].first = c;
    for (const auto& [ph, c] : oc) pairs[ph].second = c;
    for (const auto& [ph, p] : pairs) {
      const Cell& a = p.first;
      const Cell& b = p.second;
      od.read_bytes[0] += a.read, od.write_bytes[0] += a.write, od.writeback_bytes[0] += a.writeback;
      od.read_bytes[1] += b.read, od.write_bytes[1] += b.write, od.writeback_bytes[1] += b.writeback;
      const double ta = static_cast<double>(a.read + a.write), ob = static_cast<double>(b.read + b.write);
      miss_err += std::fabs(ob - ta);
      err += std::fabs(ob + static_cast<double>(b.writeback) - ta - static_cast<double>(a.writeback));
      if (ta > 0 && ob > 0) {
        split_weighted += ta * std::fabs(static_cast<double>(b.write) / ob - static_cast<double>(a.write) / ta);
        split_weight += ta;
      }
    }
    d.truth_bytes += od.bytes(0);
    d.other_bytes += od.bytes(1);
    d.truth_miss_bytes += od.read_bytes[0] + od.write_bytes[0];
    d.other_miss_bytes += od.read_bytes[1] + od.write_bytes[1];
    truth_writes += od.write_bytes[0];
    other_writes += od.write_bytes[1];
    hot_truth.push_back(static_cast<double>(od.bytes(0)));
    hot_other.push_back(static_cast<double>(od.bytes(1)));
    d.objects.push_back(od);
  }
  for (size_t i = 0; i < other.objects.size(); ++i) {
    if (m.of_other[i] >= 0) continue;
    const ObjectProfile& o = other.objects[i];
    ObjectDiff od;
    od.tag = o.tag;
    od.size = o.size;
    od.persistent = o.persistent;
    od.in_other = true;
    for (const auto& [ph, c] : cells_of(o, false, wb)) {
      od.read_bytes[1] += c.read, od.write_bytes[1] += c.write, od.writeback_bytes[1] += c.writeback;
    }
    // Traffic the truth does not have is error too.
    err += static_cast<double>(od.bytes(1));
    miss_err += static_cast<double>(od.read_bytes[1] + od.write_bytes[1]);
    d.other_bytes += od.bytes(1);
    d.other_miss_bytes += od.read_bytes[1] + od.write_bytes[1];
    other_writes += od.write_bytes[1];
    ++d.other_only;
    d.objects.push_back(od);
  }
  d.traffic_error = d.truth_bytes > 0 ? err / static_cast<double>(d.truth_bytes) : kNaN;
  d.miss_traffic_error = d.truth_miss_bytes > 0 ? miss_err / static_cast<double>(d.truth_miss_bytes) : kNaN;
  d.rw_split_error = split_weight > 0 ? split_weighted / split_weight : kNaN;
  d.truth_write_share = d.truth_miss_bytes > 0 ? static_cast<double>(truth_writes) / static_cast<double>(d.truth_miss_bytes) : kNaN;
  d.other_write_share = d.other_miss_bytes > 0 ? static_cast<double>(other_writes) / static_cast<double>(d.other_miss_bytes) : kNaN;
  d.spearman = spearman_rank_correlation(hot_truth, hot_other);
  std::stable_sort(d.objects.begin(), d.objects.end(), [](const ObjectDiff& a, const ObjectDiff& b) {
    if (a.in_truth != b.in_truth) return a.in_truth;
    return a.bytes(a.in_truth ? 0 : 1) > b.bytes(b.in_truth ? 0 : 1);
  });
  for (const ObjectDiff& od : d.objects) {
    if (od.in_truth && od.bytes(0) > 0 &&
        static_cast<double>(od.bytes(0)) > options.hot_share * static_cast<double>(d.truth_bytes) && od.bytes(1) == 0) {
      d.untouched_hot.push_back(od);
    }
  }
  *out = std::move(d);
  return true;
}

std::string format_diff_text(const ProfileDiff& d, size_t top) {
  std::string s;
  const char* unit = d.phases_compared ? "per object and phase" : "per object (periods differ: phases not paired)";
  s += "traffic error (reads + writes" + std::string(d.truth_counts_writebacks ? " + write-backs" : "") + ", " + unit +
       "): " + score(d.traffic_error) + "\n";
  s += "miss traffic error (reads + writes): " + score(d.miss_traffic_error) + "\n";
  s += "read/write split error: " + score(d.rw_split_error) + " (write share of misses: truth " +
       score(d.truth_write_share) + ", other " + score(d.other_write_share) + ")\n";
  s += "rank correlation of object hotness (Spearman): " + score(d.spearman) + " over " +
       std::to_string(d.objects.size() - d.other_only) + " objects\n";
  s += "traffic per step: truth " + kib(d.truth_bytes) + " KiB, other " + kib(d.other_bytes) + " KiB\n";
  s += "objects: " + std::to_string(d.matched_by_tag) + " matched by tag, " + std::to_string(d.matched_by_size) +
       " by size and lifetime, " + std::to_string(d.truth_only) + " only in the truth, " +
       std::to_string(d.other_only) + " only in the other\n";
  s += "hot objects reported untouched: " + std::to_string(d.untouched_hot.size()) + "\n";
  for (const ObjectDiff& od : d.untouched_hot) {
    char line[160];
    std::snprintf(line, sizeof line, "  %s %10" PRIu64 " B%s: %.1f%% of the truth's traffic\n", hex(od.tag).c_str(),
                  od.size, od.persistent ? " persistent" : "",
                  100.0 * static_cast<double>(od.bytes(0)) / static_cast<double>(d.truth_bytes));
    s += line;
  }
  s += "objects with the most truth traffic (KiB per step: reads/writes/write-backs):\n";
  s += "  tag                      size        truth r/w/wb                  other r/w/wb\n";
  size_t shown = 0;
  for (const ObjectDiff& od : d.objects) {
    if (shown++ == top) break;
    char line[240];
    std::snprintf(line, sizeof line, "  %s %10" PRIu64 "  %8s/%8s/%8s  %8s/%8s/%8s%s%s\n", hex(od.tag).c_str(), od.size,
                  kib(od.read_bytes[0]).c_str(), kib(od.write_bytes[0]).c_str(), kib(od.writeback_bytes[0]).c_str(),
                  kib(od.read_bytes[1]).c_str(), kib(od.write_bytes[1]).c_str(), kib(od.writeback_bytes[1]).c_str(),
                  !od.in_other ? "  (not in the other)" : !od.in_truth ? "  (not in the truth)" : "",
                  od.matched_by_size ? "  (matched by size and lifetime)" : "");
    s += line;
  }
  return s;
}

std::string format_diff_json(const ProfileDiff& d) {
  using nlohmann::json;
  auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  auto object = [](const ObjectDiff& od) {
    json o = {{"tag", hex(od.tag)}, {"size", od.size}, {"persistent", od.persistent}, {"in_truth", od.in_truth},
              {"in_other", od.in_other}, {"matched_by_size", od.matched_by_size}};
    const char* side[2] = {"truth", "other"};
    for (int i = 0; i < 2; ++i) {
      o[side[i]] = {{"read_bytes", od.read_bytes[i]}, {"write_bytes", od.write_bytes[i]},
                    {"writeback_bytes", od.writeback_bytes[i]}};
    }
    return o;
  };
  json j = {{"phases_compared", d.phases_compared},
            {"truth_counts_writebacks", d.truth_counts_writebacks},
            {"traffic_error", num(d.traffic_error)},
            {"miss_traffic_error", num(d.miss_traffic_error)},
            {"rw_split_error", num(d.rw_split_error)},
            {"truth_write_share", num(d.truth_write_share)},
            {"other_write_share", num(d.other_write_share)},
            {"spearman", num(d.spearman)},
            {"truth_bytes", d.truth_bytes},
            {"other_bytes", d.other_bytes},
            {"matched_by_tag", d.matched_by_tag},
            {"matched_by_size", d.matched_by_size},
            {"truth_only", d.truth_only},
            {"other_only", d.other_only}};
  json hot = json::array(), all = json::array();
  for (const ObjectDiff& od : d.untouched_hot) hot.push_back(object(od));
  for (const ObjectDiff& od : d.objects) all.push_back(object(od));
  j["untouched_hot"] = hot;
  j["objects"] = all;
  return j.dump(1) + "\n";
}

}  // namespace sentinel
