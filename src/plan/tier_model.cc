#include "plan/tier_model.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace sentinel {
namespace {

TierModel dram_tier() { return TierModel{"dram", 80.0, 80.0, 60.0}; }

bool set_key(MemorySystem* m, const std::string& key, const std::string& value, std::string* err) {
  if (key == "name") {
    m->name = value;
    return true;
  }
  if (key == "base") {
    return memory_system_preset(value, m, err);
  }
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0' || !std::isfinite(v)) {
    *err = "'" + key + "': '" + value + "' is not a number";
    return false;
  }
  double* slot = nullptr;
  if (key == "migration_bw_gbps") slot = &m->migration_bw_gbps;
  else if (key == "migration_setup_ns") slot = &m->migration_setup_ns;
  else if (key == "mlp") slot = &m->mlp;
  else if (key == "access_bytes") slot = &m->access_bytes;
  else if (key == "stream_share") slot = &m->stream_share;
  else if (key == "fault_ns_per_byte") slot = &m->fault_ns_per_byte;
  else if (key == "fast.latency_ns") slot = &m->fast.latency_ns;
  else if (key == "fast.read_bw_gbps") slot = &m->fast.read_bw_gbps;
  else if (key == "fast.write_bw_gbps") slot = &m->fast.write_bw_gbps;
  else if (key == "slow.latency_ns") slot = &m->slow.latency_ns;
  else if (key == "slow.read_bw_gbps") slot = &m->slow.read_bw_gbps;
  else if (key == "slow.write_bw_gbps") slot = &m->slow.write_bw_gbps;
  if (slot == nullptr) {
    *err = "unknown key '" + key + "'";
    return false;
  }
  *slot = v;
  return true;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

void set_error(std::string* error, const std::string& msg) {
  if (error != nullptr) *error = msg;
}

}  // namespace

double MemorySystem::latency_delta_ns() const {
  // A streamed miss pays only the bandwidth difference; the others pay the latency difference too.
  return (1.0 - stream_share) * std::max(0.0, slow.latency_ns - fast.latency_ns) / mlp;
}

double MemorySystem::read_penalty_ns() const {
  double lat = latency_delta_ns();
  double bw = access_bytes / slow.read_bw_gbps - access_bytes / fast.read_bw_gbps;
  return std::max(0.0, std::max(lat, bw));
}

double MemorySystem::write_penalty_ns() const {
  return std::max(0.0, access_bytes / slow.write_bw_gbps - access_bytes / fast.write_bw_gbps);
}

bool validate_memory_system(const MemorySystem& m, std::string* error) {
  auto bad = [&](const std::string& msg) {
    set_error(error, msg);
    return false;
  };
  const TierModel* tiers[] = {&m.fast, &m.slow};
  const char* names[] = {"fast", "slow"};
  for (int i = 0; i < 2; ++i) {
    const TierModel& t = *tiers[i];
    if (!(t.latency_ns >= 0)) return bad(std::string(names[i]) + ".latency_ns must be >= 0");
    if (!(t.read_bw_gbps > 0)) return bad(std::string(names[i]) + ".read_bw_gbps must be > 0");
    if (!(t.write_bw_gbps > 0)) return bad(std::string(names[i]) + ".write_bw_gbps must be > 0");
  }
  if (!(m.migration_bw_gbps > 0)) return bad("migration_bw_gbps must be > 0");
  if (!(m.migration_setup_ns >= 0)) return bad("migration_setup_ns must be >= 0");
  if (!(m.mlp >= 1)) return bad("mlp must be >= 1");
  if (!(m.access_bytes >= 1)) return bad("access_bytes must be >= 1");
  if (!(m.stream_share >= 0 && m.stream_share <= 1)) return bad("stream_share must be between 0 and 1");
  if (!(m.fault_ns_per_byte >= 0)) return bad("fault_ns_per_byte must be >= 0");
  if (m.slow.latency_ns < m.fast.latency_ns) return bad("slow.latency_ns is below fast.latency_ns");
  if (m.slow.read_bw_gbps > m.fast.read_bw_gbps)
    return bad("slow.read_bw_gbps is above fast.read_bw_gbps");
  if (m.slow.write_bw_gbps > m.fast.write_bw_gbps)
    return bad("slow.write_bw_gbps is above fast.write_bw_gbps");
  return true;
}

std::vector<std::string> memory_system_preset_names() {
  return {"dram", "optane", "optane-2m", "cxl", "cxl-2m", "cxl-x8", "cxl-x8-2m"};
}

bool memory_system_preset(std::string_view name, MemorySystem* out, std::string* error) {
  MemorySystem m;
  m.fast = dram_tier();
  m.mlp = 8.0;
  m.access_bytes = 64.0;
  if (name == "dram") {
    m.slow = dram_tier();
    m.migration_bw_gbps = 3.3;
  } else if (name == "optane" || name == "optane-2m") {
    // Six interleaved Optane PMem DIMMs (App Direct / KMEM-DAX); DESIGN.md section 3. Migration of 4
    // KiB pages as the slow-tier emulator measures Linux 6.1's move_pages on this tier (1.80-1.95 GB/s,
    // docs/slow-tier-emulator.md; the published DRAM-to-DRAM figure on Zen 3 is 3.3 GB/s).
    m.slow = TierModel{"optane", 305.0, 39.4, 13.9};
    m.migration_bw_gbps = name == "optane" ? 1.9 : 11.0;
  } else if (name == "cxl" || name == "cxl-2m") {
    // DRAM + 90 ns (Pond's upper figure); the bandwidth is an assumption (docs/tier-model.md).
    // Migration of 4 KiB pages as the emulator measures it (1.84-1.97 GB/s).
    m.slow = TierModel{"cxl", 170.0, 30.0, 25.0};
    m.migration_bw_gbps = name == "cxl" ? 1.9 : 11.0;
  } else if (name == "cxl-x8" || name == "cxl-x8-2m") {
    // One DDR4-backed x8 CXL expander as measured on AMD Turin (docs/tier-model.md): ~250 ns idle
    // against ~130 ns local DRAM on the same machine, ~24 GB/s all-read and ~21 GB/s at a 1:1
    // read:write mix per device; the write figure is the one that gives 21 GB/s for that mix when
    // reads and writes take turns (1/24 + 1/w = 2/21).
    m.fast.latency_ns = 130.0;
    m.slow = TierModel{"cxl-x8", 250.0, 24.0, 18.7};
    m.migration_bw_gbps = name == "cxl-x8" ? 3.3 : 11.0;
  } else {
    set_error(error, "unknown tier preset '" + std::string(name) + "'");
    return false;
  }
  m.name = std::string(name);
  *out = m;
  return true;
}

bool parse_memory_system(std::string_view text, MemorySystem* m, std::string* error) {
  MemorySystem work = *m;
  std::string err;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      set_error(error, "tier file: not a valid JSON object");
      return false;
    }
    // Apply "base" first so that other keys override the preset.
    if (j.contains("base")) {
      if (!j["base"].is_string() || !set_key(&work, "base", j["base"].get<std::string>(), &err)) {
        set_error(error, "tier file: base: " + (err.empty() ? "must be a string" : err));
        return false;
      }
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "base") continue;
      std::string value;
      if (it->is_string()) value = it->get<std::string>();
      else if (it->is_number()) value = it->dump();
      else {
        set_error(error, "tier file: '" + it.key() + "' must be a number or string");
        return false;
      }
      if (!set_key(&work, it.key(), value, &err)) {
        set_error(error, "tier file: " + err);
        return false;
      }
    }
  } else {
    std::istringstream in{std::string(text)};
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      size_t hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      line = trim(line);
      if (line.empty()) continue;
      size_t eq = line.find('=');
      if (eq == std::string::npos) {
        set_error(error, "tier file line " + std::to_string(lineno) + ": expected key = value");
        return false;
      }
      if (!set_key(&work, trim(line.substr(0, eq)), trim(line.substr(eq + 1)), &err)) {
        set_error(error, "tier file line " + std::to_string(lineno) + ": " + err);
        return false;
      }
    }
  }
  if (!validate_memory_system(work, &err)) {
    set_error(error, "tier file: " + err);
    return false;
  }
  *m = work;
  return true;
}

bool load_memory_system_file(const std::string& path, MemorySystem* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    set_error(error, "cannot open tier file '" + path + "'");
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  MemorySystem m;
  memory_system_preset("cxl", &m, nullptr);
  m.name = path;
  if (!parse_memory_system(ss.str(), &m, error)) return false;
  *out = m;
  return true;
}

bool resolve_memory_system(const std::string& name_or_path, MemorySystem* out, std::string* error) {
  for (const auto& n : memory_system_preset_names()) {
    if (n == name_or_path) return memory_system_preset(n, out, error);
  }
  return load_memory_system_file(name_or_path, out, error);
}

std::string describe_memory_system(const MemorySystem& m) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%s: fast %.0f ns %.1f/%.1f GB/s r/w, slow %.0f ns %.1f/%.1f GB/s r/w, "
                "migration %.1f GB/s + %.0f us per move, mlp %.0f, %.0f%% of misses streamed, "
                "fresh pages %.2f ns/B",
                m.name.c_str(), m.fast.latency_ns, m.fast.read_bw_gbps, m.fast.write_bw_gbps,
                m.slow.latency_ns, m.slow.read_bw_gbps, m.slow.write_bw_gbps, m.migration_bw_gbps,
                m.migration_setup_ns / 1e3, m.mlp, 100 * m.stream_share, m.fault_ns_per_byte);
  return buf;
}

}  // namespace sentinel
