#include "core/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace sentinel {
namespace {

using Env = std::map<std::string, std::string>;

const char* lookup(const char* name, void* ctx) {
  auto* env = static_cast<Env*>(ctx);
  auto it = env->find(name);
  return it == env->end() ? nullptr : it->second.c_str();
}

bool parse(Env env, Config* c, std::string* error) {
  const Status s = parse_config(lookup, &env, c);
  *error = s.message();
  return s.is_ok();
}

TEST(Config, DefaultsWhenNothingIsSet) {
  Config c;
  std::string error;
  ASSERT_TRUE(parse({}, &c, &error));
  EXPECT_EQ(c.mode, Mode::kTrack);
  EXPECT_EQ(c.min_object, 64u * 1024);
  EXPECT_EQ(c.log_level, LogLevel::kWarn);
  EXPECT_EQ(c.stats_path[0], '\0');
  EXPECT_EQ(c.stack_depth, 16u);
}

// Period 1 (every miss: the emulated PMU's ground truth) is accepted; the emulated ring follows the
// period unless SENTINEL_PMU_RING says otherwise.
TEST(Config, SamplePeriodOneAndTheEmulatedRing) {
  Config c;
  std::string error;
  ASSERT_TRUE(parse({{"SENTINEL_SAMPLE_PERIOD", "1"}}, &c, &error)) << error;
  EXPECT_EQ(c.sample_period, 1u);
  EXPECT_EQ(c.pmu_source, PmuSourceChoice::kAuto);
  EXPECT_EQ(emulated_pmu_ring_bytes(c), 64ull << 20);
  c.sample_period = 2;
  EXPECT_EQ(emulated_pmu_ring_bytes(c), 32ull << 20);
  c.sample_period = 100;
  EXPECT_EQ(emulated_pmu_ring_bytes(c), 1ull << 20);
  c.sample_period = 10007;
  EXPECT_EQ(emulated_pmu_ring_bytes(c), 1ull << 20);
  Config d;
  ASSERT_TRUE(parse({{"SENTINEL_SAMPLE_PERIOD", "1"}, {"SENTINEL_PMU_RING", "256M"}}, &d, &error)) << error;
  EXPECT_EQ(emulated_pmu_ring_bytes(d), 256ull << 20);
  EXPECT_STREQ(pmu_source_setting_name(PmuSourceChoice::kQemuSlowtier), "qemu-slowtier");
}

TEST(Config, ReadsEveryVariable) {
  Config c;
  std::string error;
  ASSERT_TRUE(parse({{"SENTINEL_MODE", "passthrough"},
                     {"SENTINEL_MIN_OBJECT", "1M"},
                     {"SENTINEL_LOG", "debug"},
                     {"SENTINEL_LOG_FILE", "/tmp/x.log"},
                     {"SENTINEL_STATS", "/tmp/s.json"},
                     {"SENTINEL_STACK_DEPTH", "8"},
                     {"SENTINEL_RESERVE", "64G"},
                     {"SENTINEL_TRACE", "/tmp/t"},
                     {"SENTINEL_SAMPLER", "software"},
                     {"SENTINEL_WARMUP_STEPS", "3"},
                     {"SENTINEL_PROFILE_STEPS", "4"},
                     {"SENTINEL_PROFILE_OUT", "/tmp/p.json"},
                     {"SENTINEL_SAMPLE_PERIOD", "2000"},
                     {"SENTINEL_PMU_SOURCE", "qemu-slowtier"},
                     {"SENTINEL_PMU_RING", "8M"},
                     {"SENTINEL_FAST_BUDGET", "20%"},
                     {"SENTINEL_FAST_NODE", "1"},
                     {"SENTINEL_SLOW_NODE", "0"},
                     {"SENTINEL_SYSFS_ROOT", "/tmp/sys"},
                     {"SENTINEL_PROFILE_IN", "/tmp/in.json"},
                     {"SENTINEL_PLAN", "/tmp/plan.json"},
                     {"SENTINEL_TIER", "optane"},
                     {"SENTINEL_TIMELINE", "/tmp/tl.jsonl"},
                     {"SENTINEL_TIMELINE_STEPS", "7"},
                     {"SENTINEL_REPLAN_ROUNDS", "2"},
                     {"SENTINEL_PLACEMENT_CHECK", "5"}},
                    &c, &error))
      << error;
  EXPECT_EQ(c.mode, Mode::kPassthrough);
  EXPECT_EQ(c.min_object, 1u << 20);
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_STREQ(c.log_file, "/tmp/x.log");
  EXPECT_STREQ(c.stats_path, "/tmp/s.json");
  EXPECT_EQ(c.stack_depth, 8u);
  EXPECT_EQ(c.reserve_bytes, 64ull << 30);
  EXPECT_STREQ(c.trace_path, "/tmp/t");
  EXPECT_EQ(c.sampler, SamplerChoiceSetting::kSoftware);
  EXPECT_EQ(c.pmu_source, PmuSourceChoice::kQemuSlowtier);
  EXPECT_EQ(c.pmu_ring_bytes, 8ull << 20);
  EXPECT_EQ(c.warmup_steps, 3u);
  EXPECT_EQ(c.profile_steps, 4u);
  EXPECT_STREQ(c.profile_out, "/tmp/p.json");
  EXPECT_EQ(c.sample_period, 2000u);
  EXPECT_TRUE(c.profile_out_set);
  EXPECT_EQ(c.fast_budget.kind, BudgetKind::kPercent);
  EXPECT_EQ(c.fast_budget.percent_ppm, 200000u);
  EXPECT_EQ(c.fast_node, 1);
  EXPECT_EQ(c.slow_node, 0);
  EXPECT_STREQ(c.sysfs_root, "/tmp/sys");
  EXPECT_STREQ(c.profile_in, "/tmp/in.json");
  EXPECT_STREQ(c.plan_in, "/tmp/plan.json");
  EXPECT_STREQ(c.tier, "optane");
  EXPECT_STREQ(c.timeline_path, "/tmp/tl.jsonl");
  EXPECT_EQ(c.timeline_steps, 7u);
  EXPECT_EQ(c.replan_rounds, 2u);
  EXPECT_EQ(c.placement_check, 5u);
}

TEST(Config, ManagedModeAndProfileFileDefaults) {
  Config c;
  std::string error;
  ASSERT_TRUE(parse({{"SENTINEL_MODE", "managed"}}, &c, &error)) << error;
  EXPECT_EQ(c.mode, Mode::kManaged);
  EXPECT_FALSE(c.write_profile());  // managed mode writes a profile only when asked to
  ASSERT_TRUE(parse({{"SENTINEL_MODE", "profile"}}, &c, &error)) << error;
  EXPECT_TRUE(c.write_profile());
  EXPECT_EQ(c.fast_budget.kind, BudgetKind::kUnlimited);
  EXPECT_EQ(c.fast_node, -1);
}

// README's variable table and the configuration table are the same list: every variable the runtime
// reads has a row naming it, and every SENTINEL_ variable in a README row is one the runtime reads.
TEST(Config, ReadmeTableListsEveryVariable) {
  std::ifstream in(SENTINEL_README);
  ASSERT_TRUE(in) << SENTINEL_README;
  std::set<std::string> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `SENTINEL_", 0) != 0) continue;
    for (size_t at = line.find("`SENTINEL_"); at != std::string::npos && at < line.find(" |", 2);
         at = line.find("`SENTINEL_", at + 1)) {
      rows.insert(line.substr(at + 1, line.find('`', at + 1) - at - 1));
    }
  }
  std::set<std::string> table;
  for (size_t i = 0; i < config_variable_count(); ++i) table.insert(config_variable(i).name);
  for (const std::string& name : table) EXPECT_TRUE(rows.count(name)) << name << " is missing from README's table";
  for (const std::string& name : rows) EXPECT_TRUE(table.count(name)) << name << " in README is not a variable";
}

struct BadValue {
  const char* variable;
  const char* value;
  const char* accepted_fragment;
};

class ConfigBadValue : public ::testing::TestWithParam<BadValue> {};

TEST_P(ConfigBadValue, OneLineNamingVariableValueAndAcceptedValues) {
  const BadValue& b = GetParam();
  Config c;
  c.min_object = 12345;  // must stay untouched on failure
  std::string error;
  EXPECT_FALSE(parse({{b.variable, b.value}}, &c, &error));
  EXPECT_EQ(c.min_object, 12345u);
  EXPECT_NE(error.find(b.variable), std::string::npos) << error;
  EXPECT_NE(error.find(std::string("'") + b.value + "'"), std::string::npos) << error;
  EXPECT_NE(error.find(b.accepted_fragment), std::string::npos) << error;
  EXPECT_NE(error.find("pass-through"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    All, ConfigBadValue,
    ::testing::Values(BadValue{"SENTINEL_MODE", "fast", "passthrough, track, profile, managed"},
                      BadValue{"SENTINEL_FAST_BUDGET", "lots", "percentage of the peak"},
                      BadValue{"SENTINEL_FAST_BUDGET", "120%", "(0, 100]"},
                      BadValue{"SENTINEL_FAST_NODE", "x", "0 to 1023"},
                      BadValue{"SENTINEL_SLOW_NODE", "-1", "0 to 1023"},
                      BadValue{"SENTINEL_TIMELINE_STEPS", "0", "1 to 10000"},
                      BadValue{"SENTINEL_PLAN", "", "non-empty file path"},
                      BadValue{"SENTINEL_MODE", "", "passthrough, track, profile"},
                      BadValue{"SENTINEL_SAMPLER", "perf", "auto, pebs, ibs, software, none"},
                      BadValue{"SENTINEL_WARMUP_STEPS", "-1", "0 to 100000"},
                      BadValue{"SENTINEL_PROFILE_STEPS", "0", "1 to 100"},
                      BadValue{"SENTINEL_PROFILE_OUT", "", "non-empty file path"},
                      BadValue{"SENTINEL_SAMPLE_PERIOD", "0", "1 to 100000000"},
                      BadValue{"SENTINEL_PMU_SOURCE", "kernel", "auto, perf, qemu-slowtier"},
                      BadValue{"SENTINEL_PMU_RING", "3M", "a power of two of bytes from 64K to 256M"},
                      BadValue{"SENTINEL_PMU_RING", "512M", "a power of two of bytes from 64K to 256M"},
                      BadValue{"SENTINEL_DRY_RUN", "yes", "0 or 1"},
                      BadValue{"SENTINEL_MIN_OBJECT", "lots", "4096 to 1G"},
                      BadValue{"SENTINEL_MIN_OBJECT", "100", "4096 to 1G"},
                      BadValue{"SENTINEL_MIN_OBJECT", "2G", "4096 to 1G"},
                      BadValue{"SENTINEL_LOG", "verbose", "trace, debug, info, warn, error, off"},
                      BadValue{"SENTINEL_LOG_FILE", "", "non-empty file path"},
                      BadValue{"SENTINEL_STATS", "", "non-empty file path"},
                      BadValue{"SENTINEL_STATS", "s-%x.json", "%p = pid, %r = rank"},
                      BadValue{"SENTINEL_TIMELINE", "t%", "%h = host name"},
                      BadValue{"SENTINEL_STACK_DEPTH", "0", "1 to 32"},
                      BadValue{"SENTINEL_STACK_DEPTH", "64", "1 to 32"},
                      BadValue{"SENTINEL_RESERVE", "1M", "64M to 64T"}));

// A hostile value (control bytes, a newline, escape sequences, non-ASCII, a great length) still gives
// one printable line that ends saying Sentinel runs as a pass-through allocator, for every variable.
TEST(Config, AHostileValueIsShownEscapedAndCutShortOnOneLine) {
  const std::string hostile = "\x1b[2J\nrm -rf '\\" + std::string(600, '\xfc');  // too long even for a path
  for (size_t i = 0; i < config_variable_count(); ++i) {
    const std::string name = config_variable(i).name;
    Config c;
    std::string error;
    ASSERT_FALSE(parse({{name, hostile}}, &c, &error)) << name;
    EXPECT_EQ(error.rfind("sentinel: invalid " + name + "='\\x1b[2J\\x0arm -rf \\x27\\x5c\\xfc", 0), 0u) << error;
    EXPECT_NE(error.find("...': accepted "), std::string::npos) << error;
    EXPECT_NE(error.find("; running as a pass-through allocator"), std::string::npos) << error;
    for (const char ch : error) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << name << ": " << error;
  }
}

TEST(Config, OutputPathsAreResolvedForTheProcessAndOnlyWrittenProfilesCount) {
  Config c;
  std::string error;
  ASSERT_TRUE(parse({{"SENTINEL_STATS", "s-%r-%p.json"}, {"SENTINEL_LOG_FILE", "log.%h"},
                     {"SENTINEL_TIMELINE", "t.json"}},
                    &c, &error))
      << error;
  EXPECT_STREQ(c.stats_path, "s-%r-%p.json");  // parsing keeps the pattern
  ProcessIdentity id;
  id.pid = 31;
  id.rank = 2;
  id.world_size = 4;
  std::snprintf(id.host, sizeof id.host, "hostA");
  const Status resolved = resolve_output_paths(&c, id, 1, nullptr);
  ASSERT_TRUE(resolved.is_ok()) << resolved.message();
  EXPECT_STREQ(c.stats_path, "s-2-31.json");
  EXPECT_STREQ(c.log_file, "log.hostA.r2");
  EXPECT_STREQ(c.timeline_path, "t.json.r2");
  EXPECT_STREQ(c.profile_out, "sentinel-profile.json");  // track mode writes no profile: untouched
  EXPECT_NE(std::string(c.output_note).find("SENTINEL_TIMELINE"), std::string::npos);
}

TEST(Config, UnknownVariableIsReportedButForeignPrefixesAreNot) {
  char warning[512];
  // Whatever SENTINEL_* variables the test runs under (a developer's, CI's) are set aside meanwhile.
  std::vector<std::string> saved;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).starts_with("SENTINEL_")) saved.emplace_back(*e);
  for (const std::string& entry : saved) unsetenv(entry.substr(0, entry.find('=')).c_str());
  setenv("SENTINEL_BUILD_DIR", "/tmp/build", 1);  // the scripts' own variables are not Sentinel's
  setenv("SENTINEL_GUEST_TIMEOUT", "5", 1);
  unsetenv("SENTINEL_MODEE");
  EXPECT_FALSE(find_unknown_variable(warning, sizeof warning));
  setenv("SENTINEL_MODEE", "track", 1);
  ASSERT_TRUE(find_unknown_variable(warning, sizeof warning));
  EXPECT_NE(std::string(warning).find("SENTINEL_MODEE"), std::string::npos);
  unsetenv("SENTINEL_MODEE");
  unsetenv("SENTINEL_GUEST_TIMEOUT");
  unsetenv("SENTINEL_BUILD_DIR");
  for (const std::string& entry : saved) {
    const size_t eq = entry.find('=');
    setenv(entry.substr(0, eq).c_str(), entry.c_str() + eq + 1, 1);
  }
}

}  // namespace
}  // namespace sentinel
