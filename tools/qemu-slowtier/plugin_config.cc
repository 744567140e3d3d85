#include "plugin_config.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace sentinel::slowtier {
namespace {

bool parse_double(const std::string& s, double lo, double* out) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || v < lo) return false;
  *out = v;
  return true;
}

bool parse_u64(const std::string& s, uint64_t lo, uint64_t* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return false;
  uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
  if (v < lo) return false;
  *out = v;
  return true;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

bool parse_plugin_args(int argc, const char* const* argv, PluginConfig* out, std::string* error) {
  PluginConfig c;
  bool have_base = false;
  uint64_t node1_base_mb = 0;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg(argv[i]);
    size_t eq = arg.find('=');
    if (eq == std::string_view::npos) {
      *error = "argument '" + std::string(arg) + "' is not key=value";
      return false;
    }
    std::string key(arg.substr(0, eq));
    std::string value(arg.substr(eq + 1));
    bool ok = true;
    uint64_t u = 0;
    if (key == "tier") {
      c.tier_spec = value;
      std::string err;
      if (!resolve_memory_system(value, &c.tier, &err)) {
        *error = "tier: " + err;
        return false;
      }
    } else if (key == "stats") {
      c.stats_path = value;
    } else if (key == "node0_mb") {
      ok = parse_u64(value, 1, &u);
      c.node0_bytes = u << 20;
    } else if (key == "node1_mb") {
      ok = parse_u64(value, 1, &u);
      c.node1_bytes = u << 20;
    } else if (key == "layout") {
      ok = value == "plain" || value == "kmem";
      c.layout = value == "kmem" ? NodeMap::Layout::kKmem : NodeMap::Layout::kPlain;
    } else if (key == "node1_base_mb") {
      ok = parse_u64(value, 0, &node1_base_mb);
      have_base = true;
    } else if (key == "node0_file") {
      c.node0_file = value;
    } else if (key == "node1_file") {
      c.node1_file = value;
    } else if (key == "cpi") {
      ok = parse_double(value, 1e-3, &c.cpi);
    } else if (key == "freq_ghz") {
      ok = parse_double(value, 1e-3, &c.freq_ghz);
    } else if (key == "cache_kb") {
      ok = parse_u64(value, 1, &u) && u <= (uint64_t{1} << 22);
      c.cache_bytes = u << 10;
    } else if (key == "cache_ways") {
      ok = parse_u64(value, 1, &u) && u <= 64;
      c.cache_ways = static_cast<uint32_t>(u);
    } else if (key == "epoch_insns") {
      ok = parse_u64(value, 1, &c.epoch_instructions);
    } else if (key == "delay_ns") {
      ok = parse_double(value, 0, &c.delay_ns);
    } else if (key == "stream_trackers") {
      ok = parse_u64(value, 0, &u) && u <= 256;
      c.stream.trackers = static_cast<uint32_t>(u);
    } else if (key == "stream_train") {
      ok = parse_u64(value, 0, &u) && u <= 64;
      c.stream.train = static_cast<uint32_t>(u);
    } else if (key == "stream_window") {
      ok = parse_u64(value, 1, &u) && u <= 64;
      c.stream.window = static_cast<uint32_t>(u);
    } else if (key == "string_bytes_per_cycle") {
      ok = parse_double(value, 0, &c.string_bytes_per_cycle);
    } else if (key == "sync_quantum_ns") {
      ok = parse_double(value, 0, &c.sync.quantum_ns);
    } else if (key == "sync_max_wait_ms") {
      double ms = 0;
      ok = parse_double(value, 0, &ms);
      c.sync.max_wait_host_ns = ms * 1e6;
    } else {
      *error = "unknown key '" + key + "'";
      return false;
    }
    if (!ok) {
      *error = "'" + key + "': bad value '" + value + "'";
      return false;
    }
  }
  if (c.tier_spec.empty()) {
    *error = "tier=optane|cxl|FILE is required";
    return false;
  }
  if (c.node0_bytes == 0 || c.node1_bytes == 0) {
    *error = "node0_mb and node1_mb are required";
    return false;
  }
  c.node1_base = have_base ? node1_base_mb << 20 : NodeMap::qemu72_node1_base(c.layout, c.node0_bytes);
  if (c.node1_base < c.node0_bytes) {
    *error = "node1_base_mb overlaps node 0";
    return false;
  }
  *out = c;
  return true;
}

ClockParams clock_params(const PluginConfig& c) {
  ClockParams p;
  p.cpi = c.cpi;
  p.string_bytes_per_cycle = c.string_bytes_per_cycle;
  p.freq_ghz = c.freq_ghz;
  p.mlp = c.tier.mlp;
  p.line_bytes = c.tier.access_bytes;
  const TierModel* tiers[2] = {&c.tier.fast, &c.tier.slow};
  for (int n = 0; n < 2; ++n) {
    p.node[n].latency_ns = tiers[n]->latency_ns;
    p.node[n].read_bw_gbps = tiers[n]->read_bw_gbps;
    p.node[n].write_bw_gbps = tiers[n]->write_bw_gbps;
  }
  return p;
}

std::string parameters_json(const PluginConfig& c) {
  const MemorySystem& m = c.tier;
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "\"tier\": %s, \"tier_description\": %s, "
                "\"fast_latency_ns\": %g, \"fast_read_bw_gbps\": %g, \"fast_write_bw_gbps\": %g, "
                "\"slow_latency_ns\": %g, \"slow_read_bw_gbps\": %g, \"slow_write_bw_gbps\": %g, "
                "\"mlp\": %g, \"line_bytes\": %g, \"cpi\": %g, \"freq_ghz\": %g, "
                "\"cache_bytes\": %llu, \"cache_ways\": %u, \"epoch_instructions\": %llu, "
                "\"delay_ns\": %g, \"layout\": \"%s\", \"node0_bytes\": %llu, \"node1_bytes\": %llu, "
                "\"node1_base\": %llu, "
                "\"stream_trackers\": %u, \"stream_train\": %u, \"stream_window\": %u, "
                "\"string_bytes_per_cycle\": %g, \"sync_quantum_ns\": %g, \"sync_max_wait_ms\": %g",
                json_string(c.tier_spec).c_str(), json_string(describe_memory_system(m)).c_str(),
                m.fast.latency_ns, m.fast.read_bw_gbps, m.fast.write_bw_gbps, m.slow.latency_ns,
                m.slow.read_bw_gbps, m.slow.write_bw_gbps, m.mlp, m.access_bytes, c.cpi, c.freq_ghz,
                static_cast<unsigned long long>(c.cache_bytes), c.cache_ways,
                static_cast<unsigned long long>(c.epoch_instructions), c.delay_ns,
                c.layout == NodeMap::Layout::kKmem ? "kmem" : "plain",
                static_cast<unsigned long long>(c.node0_bytes),
                static_cast<unsigned long long>(c.node1_bytes),
                static_cast<unsigned long long>(c.node1_base), c.stream.trackers, c.stream.train,
                c.stream.window, c.string_bytes_per_cycle, c.sync.quantum_ns, c.sync.max_wait_host_ns / 1e6);
  return buf;
}

}  // namespace sentinel::slowtier
