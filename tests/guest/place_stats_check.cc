// place_stats_check FILE EXPR...: checks the runtime's exit statistics (SENTINEL_STATS, JSON) after a
// guest run. Each EXPR is "key OP value" with OP one of <= < == != >= > and value a number or another
// key, e.g. "peak_fast_bytes<=fast_budget_bytes" "forced_slow_allocations>0". Exit 1 on the first
// failed or malformed check, naming it; every key used must exist and be a number.
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

bool value_of(const nlohmann::json& j, const std::string& token, double* out, std::string* error) {
  if (!token.empty() && (std::isdigit(static_cast<unsigned char>(token[0])) || token[0] == '-')) {
    try {
      size_t used = 0;
      *out = std::stod(token, &used);
      if (used == token.size()) return true;
    } catch (...) {
    }
    *error = "not a number: " + token;
    return false;
  }
  auto it = j.find(token);
  if (it == j.end() || !it->is_number()) {
    *error = "no numeric key '" + token + "' in the stats";
    return false;
  }
  *out = it->get<double>();
  return true;
}

bool check(const nlohmann::json& j, const std::string& expr, std::string* error) {
  static const char* const kOps[] = {"<=", ">=", "==", "!=", "<", ">"};
  for (const char* op : kOps) {
    const size_t at = expr.find(op);
    if (at == std::string::npos) continue;
    double a = 0, b = 0;
    if (!value_of(j, expr.substr(0, at), &a, error)) return false;
    if (!value_of(j, expr.substr(at + std::string(op).size()), &b, error)) return false;
    const std::string o(op);
    const bool ok = o == "<=" ? a <= b : o == ">=" ? a >= b : o == "==" ? a == b : o == "!=" ? a != b
                  : o == "<"  ? a < b  : a > b;
    if (!ok) *error = expr + " is false (" + std::to_string(a) + " vs " + std::to_string(b) + ")";
    return ok;
  }
  *error = "no operator in '" + expr + "'";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: place_stats_check STATS.json EXPR...\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "FAIL: cannot read %s (was SENTINEL_STATS written?)\n", argv[1]);
    return 1;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    std::fprintf(stderr, "FAIL: %s is not a JSON object\n", argv[1]);
    return 1;
  }
  for (int i = 2; i < argc; ++i) {
    std::string error;
    if (!check(j, argv[i], &error)) {
      std::fprintf(stderr, "FAIL: %s\n", error.c_str());
      return 1;
    }
    std::printf("stats: %s ok\n", argv[i]);
  }
  return 0;
}
