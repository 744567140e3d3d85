#include "profile/profile_io.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "common/temp_dir.h"

namespace sentinel {
namespace {

StepProfile sample_profile() {
  StepProfile p;
  p.period = 4;
  p.step_time_ns = 123456789;
  p.peak_object_bytes = std::numeric_limits<uint64_t>::max();
  p.profiled_steps = 3;
  p.sampler = "software";
  p.sample_period = 16;
  p.program = "python3 train.py --name \"x\"\n\tpath\\ü";
  p.phases = {{10}, {20}, {0}, {std::numeric_limits<uint64_t>::max()}};
  ObjectProfile weights;
  weights.tag = 0xfedcba9876543210ull;
  weights.site = 0x1;
  weights.occurrence = 0;
  weights.size = 1 << 20;
  weights.birth_phase = 0;
  weights.death_phase = 3;
  weights.persistent = true;
  weights.accesses = {{0, 5, 1}, {3, 7, 0}};
  ObjectProfile activation;  // born in phase 2, dies in phase 1 of the next step
  activation.tag = 42;
  activation.site = 7;
  activation.occurrence = std::numeric_limits<uint32_t>::max();
  activation.size = 65536;
  activation.birth_phase = 2;
  activation.death_phase = 5;
  activation.accesses = {{0, 1, 2}, {1, 0, 0}, {2, std::numeric_limits<uint64_t>::max(), 3}, {3, 4, 4}};
  ObjectProfile cold;
  cold.tag = 43;
  cold.size = 1;
  cold.birth_phase = 1;
  cold.death_phase = 1;
  p.objects = {weights, activation, cold};
  return p;
}

void expect_equal(const StepProfile& a, const StepProfile& b) {
  EXPECT_EQ(a.period, b.period);
  EXPECT_EQ(a.step_time_ns, b.step_time_ns);
  EXPECT_EQ(a.peak_object_bytes, b.peak_object_bytes);
  EXPECT_EQ(a.profiled_steps, b.profiled_steps);
  EXPECT_EQ(a.sampler, b.sampler);
  EXPECT_EQ(a.sample_period, b.sample_period);
  EXPECT_EQ(a.program, b.program);
  ASSERT_EQ(a.phases.size(), b.phases.size());
  for (size_t i = 0; i < a.phases.size(); ++i) EXPECT_EQ(a.phases[i].duration_ns, b.phases[i].duration_ns);
  ASSERT_EQ(a.objects.size(), b.objects.size());
  for (size_t i = 0; i < a.objects.size(); ++i) {
    const ObjectProfile& x = a.objects[i];
    const ObjectProfile& y = b.objects[i];
    EXPECT_EQ(x.tag, y.tag);
    EXPECT_EQ(x.site, y.site);
    EXPECT_EQ(x.occurrence, y.occurrence);
    EXPECT_EQ(x.size, y.size);
    EXPECT_EQ(x.birth_phase, y.birth_phase);
    EXPECT_EQ(x.death_phase, y.death_phase);
    EXPECT_EQ(x.persistent, y.persistent);
    ASSERT_EQ(x.accesses.size(), y.accesses.size());
    for (size_t j = 0; j < x.accesses.size(); ++j) {
      EXPECT_EQ(x.accesses[j].phase, y.accesses[j].phase);
      EXPECT_EQ(x.accesses[j].reads, y.accesses[j].reads);
      EXPECT_EQ(x.accesses[j].writes, y.accesses[j].writes);
    }
  }
}

TEST(ProfileIo, RoundTripKeepsEveryField) {
  const StepProfile p = sample_profile();
  std::string err;
  ASSERT_TRUE(validate_profile(p, &err)) << err;
  const std::string text = serialize_profile(p);
  StepProfile q;
  ASSERT_TRUE(parse_profile(text, &q, &err)) << err << "\n" << text;
  expect_equal(p, q);
  EXPECT_EQ(serialize_profile(q), text);  // the rendering is canonical
}

TEST(ProfileIo, OutputHasHeaderAndOneLinePerObject) {
  const std::string text = serialize_profile(sample_profile());
  EXPECT_NE(text.find("\"format\": \"sentinel-profile\""), std::string::npos);
  EXPECT_NE(text.find("\"version\": 1"), std::string::npos);
  EXPECT_NE(text.find("\n{\"tag\":\"0xfedcba9876543210\""), std::string::npos);
  EXPECT_NE(text.find("\n{\"tag\":\"0x000000000000002a\""), std::string::npos);
}

// Version 2: write-backs, the sampler's source and lost samples; version 1 stays what it was.
TEST(ProfileIo, VersionTwoCarriesWritebacksSourceAndLostSamples) {
  StepProfile p = sample_profile();
  EXPECT_NE(serialize_profile(p).find("\"version\": 1"), std::string::npos);
  p.sampler = "pebs";
  p.sampler_source = "qemu-slowtier";
  p.samples_lost = 3;
  p.writebacks_counted = true;
  p.objects[0].accesses[0].writebacks = 11;
  std::string err;
  ASSERT_TRUE(validate_profile(p, &err)) << err;
  const std::string text = serialize_profile(p);
  EXPECT_NE(text.find("\"version\": 2"), std::string::npos);
  EXPECT_NE(text.find("\"sampler_source\": \"qemu-slowtier\""), std::string::npos) << text;
  EXPECT_NE(text.find("[0,5,1,11]"), std::string::npos) << text;
  EXPECT_NE(text.find("[3,7,0]"), std::string::npos) << text;  // no write-backs: three elements
  StepProfile q;
  ASSERT_TRUE(parse_profile(text, &q, &err)) << err;
  EXPECT_EQ(q.sampler_source, "qemu-slowtier");
  EXPECT_EQ(q.samples_lost, 3u);
  EXPECT_TRUE(q.writebacks_counted);
  EXPECT_EQ(q.objects[0].accesses[0].writebacks, 11u);
  EXPECT_EQ(q.objects[0].accesses[1].writebacks, 0u);
  EXPECT_EQ(q.objects[0].total_accesses(), p.objects[0].total_accesses());  // write-backs are not accesses
  EXPECT_EQ(serialize_profile(q), text);

  StepProfile bad = p;
  bad.writebacks_counted = false;
  EXPECT_FALSE(validate_profile(bad, &err));
  EXPECT_NE(err.find("does not count them"), std::string::npos) << err;
  bad = p;
  bad.sampler_source = "oracle";
  EXPECT_FALSE(validate_profile(bad, &err));
  EXPECT_NE(err.find("sampler_source"), std::string::npos) << err;
}

TEST(ProfileIo, EmptyObjectListRoundTrips) {
  StepProfile p;
  p.period = 1;
  p.phases.resize(1);
  p.sampler = "none";
  std::string err;
  StepProfile q;
  ASSERT_TRUE(parse_profile(serialize_profile(p), &q, &err)) << err;
  expect_equal(p, q);
}

TEST(ProfileIo, OptionalFieldsTakeDefaults) {
  const char* text = R"({"format":"sentinel-profile","version":1,"period":2,"sampler":"pebs",
      "phases":[{"duration_ns":1},{"duration_ns":2}],
      "objects":[{"tag":"0xAb","size":8,"birth_phase":1,"death_phase":2}]})";
  StepProfile q;
  std::string err;
  ASSERT_TRUE(parse_profile(text, &q, &err)) << err;
  EXPECT_EQ(q.step_time_ns, 0u);
  EXPECT_EQ(q.program, "");
  ASSERT_EQ(q.objects.size(), 1u);
  EXPECT_EQ(q.objects[0].tag, 0xabu);
  EXPECT_EQ(q.objects[0].site, 0u);
  EXPECT_FALSE(q.objects[0].persistent);
  EXPECT_TRUE(q.objects[0].accesses.empty());
}

TEST(ProfileIo, FileRoundTrip) {
  testing::TempDir dir("sentinel-profile-test");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("p.json");
  std::string err;
  ASSERT_TRUE(write_profile_file(path, sample_profile(), &err)) << err;
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);  // the temporary was renamed away
  StepProfile q;
  ASSERT_TRUE(read_profile_file(path, &q, &err)) << err;
  expect_equal(sample_profile(), q);
}

TEST(ProfileIo, FileErrorsNameThePath) {
  StepProfile q;
  std::string err;
  EXPECT_FALSE(read_profile_file("/nonexistent-dir/p.json", &q, &err));
  EXPECT_NE(err.find("/nonexistent-dir/p.json"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
  EXPECT_FALSE(write_profile_file("/nonexistent-dir/p.json", sample_profile(), &err));
  EXPECT_NE(err.find("/nonexistent-dir/p.json"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
  StepProfile bad = sample_profile();
  bad.objects[1].size = 0;
  EXPECT_FALSE(write_profile_file("/tmp/never-written.json", bad, &err));
  EXPECT_NE(err.find("refusing"), std::string::npos) << err;
  EXPECT_NE(access("/tmp/never-written.json", F_OK), 0);
}

// Each case replaces one piece of a valid document; the error must mention `expect`.
struct BadCase {
  const char* name;
  std::string from, to, expect;
};

TEST(ProfileIo, RejectsMalformedFieldsWithClearErrors) {
  const std::string good = serialize_profile(sample_profile());
  const BadCase cases[] = {
      {"format", "\"sentinel-profile\"", "\"other\"", "format:"},
      {"version", "\"version\": 1", "\"version\": 3", "version: 3 is not supported"},
      {"version 0", "\"version\": 1", "\"version\": 0", "version: 0 is not supported"},
      {"v2 field in v1", "\"period\": 4", "\"period\": 4, \"samples_lost\": 0", "samples_lost: unknown field in a version-1"},
      {"writebacks in v1", "[0,5,1]", "[0,5,1,2]", "objects[0].accesses[0]: must be an array [phase, reads, writes]"},
      {"version type", "\"version\": 1", "\"version\": \"1\"", "version: must be a non-negative integer"},
      {"negative", "\"step_time_ns\": 123456789", "\"step_time_ns\": -1", "step_time_ns: must be a non-negative"},
      {"float", "\"step_time_ns\": 123456789", "\"step_time_ns\": 1.5", "step_time_ns: must be a non-negative"},
      {"too big", "\"step_time_ns\": 123456789", "\"step_time_ns\": 18446744073709551616", "step_time_ns"},
      {"u32 range", "\"profiled_steps\": 3", "\"profiled_steps\": 4294967296", "does not fit in 32 bits"},
      {"period 0", "\"period\": 4", "\"period\": 0", "phases: has 4 entries, period is 0"},
      {"period mismatch", "\"period\": 4", "\"period\": 5", "phases: has 4 entries, period is 5"},
      {"sampler", "\"sampler\": \"software\"", "\"sampler\": \"magic\"", "sampler: \"magic\""},
      {"sampler type", "\"sampler\": \"software\"", "\"sampler\": 3", "sampler: must be a string"},
      {"unknown", "\"period\": 4", "\"period\": 4, \"perod\": 4", "perod: unknown field"},
      {"dup key", "\"period\": 4", "\"period\": 4, \"period\": 4", "duplicate key \"period\""},
      {"missing", "\"period\": 4,", "", "period: missing"},
      {"phase obj", "{\"duration_ns\":10}", "10", "phases[0]: is not a JSON object"},
      {"tag hex", "\"0xfedcba9876543210\"", "\"0xfedcba98765432101\"", "objects[0].tag: must be"},
      {"tag digits", "\"0xfedcba9876543210\"", "\"0xfedcba987654321g\"", "objects[0].tag: must be"},
      {"tag bare", "\"0xfedcba9876543210\"", "\"0x\"", "objects[0].tag: must be"},
      {"tag number", "\"0xfedcba9876543210\"", "5", "objects[0].tag: must be"},
      {"dup tag", "\"0x000000000000002b\"", "\"0x000000000000002a\"", "objects[2].tag: 0x000000000000002a appears twice"},
      {"size 0", "\"size\":1,", "\"size\":0,", "objects[2].size: must be greater than 0"},
      {"birth", "\"birth_phase\":2", "\"birth_phase\":4", "objects[1].birth_phase: 4 is not below period"},
      {"death<birth", "\"death_phase\":5", "\"death_phase\":1", "objects[1].death_phase: 1 is below birth_phase"},
      {"death>=2p", "\"death_phase\":5", "\"death_phase\":8", "objects[1].death_phase: 8 is not below 2*period (8)"},
      {"persistent", "\"death_phase\":3,\"persistent\":true", "\"death_phase\":2,\"persistent\":true",
       "objects[0].persistent"},
      {"persistent type", "\"persistent\":true", "\"persistent\":1", "objects[0].persistent: must be true or false"},
      {"unsorted", "[0,5,1],[3,7,0]", "[3,7,0],[0,5,1]", "objects[0].accesses[1]: phase 0 does not follow phase 3"},
      {"dup phase", "[0,5,1],[3,7,0]", "[0,5,1],[0,7,0]", "objects[0].accesses[1]: phase 0 does not follow"},
      {"phase range", "[0,5,1],[3,7,0]", "[0,5,1],[4,7,0]", "objects[0].accesses[1]: phase 4 is not below period"},
      {"access arity", "[0,5,1]", "[0,5]", "objects[0].accesses[0]: must be an array [phase, reads, writes]"},
      {"access type", "[0,5,1]", "[0,5,\"1\"]", "objects[0].accesses[0]: entries must be"},
      {"accesses type", "\"accesses\":[[0,5,1],[3,7,0]]", "\"accesses\":{}", "objects[0].accesses: must be an array"},
      {"syntax", "\"period\": 4", "\"period\" 4", "malformed profile"},
      {"deep", "\"accesses\":[[0,5,1]", "\"accesses\":[[[[[0]]]],[0,5,1]", "nesting deeper than 5 levels"},
  };
  for (const BadCase& c : cases) {
    const size_t at = good.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    std::string text = good;
    text.replace(at, c.from.size(), c.to);
    StepProfile q;
    std::string err;
    EXPECT_FALSE(parse_profile(text, &q, &err)) << c.name;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": error was: " << err;
  }
}

TEST(ProfileIo, RejectsAccessOutsideLifetime) {
  StepProfile p = sample_profile();
  p.objects[2].accesses = {{2, 1, 0}};  // lives in phase 1 only
  std::string err;
  EXPECT_FALSE(validate_profile(p, &err));
  EXPECT_NE(err.find("objects[2].accesses[0]: phase 2 is outside the object's lifetime"), std::string::npos) << err;
  p.objects[2].accesses = {{1, 1, 0}};
  EXPECT_TRUE(validate_profile(p, &err)) << err;
  // The wrapping object (phases 2,3 then 0,1 of the next step) may be accessed anywhere in that span.
  p.objects[1].death_phase = 4;  // now phases 2,3,0
  EXPECT_FALSE(validate_profile(p, &err));
  EXPECT_NE(err.find("objects[1].accesses[1]: phase 1 is outside"), std::string::npos) << err;
}

TEST(ProfileIo, RejectsNonObjectDocuments) {
  StepProfile q;
  std::string err;
  for (const char* text : {"", "[]", "null", "1", "\"sentinel-profile\"", "{", "{}", "\xff\xfe"}) {
    EXPECT_FALSE(parse_profile(text, &q, &err)) << text;
    EXPECT_FALSE(err.empty());
  }
  EXPECT_FALSE(parse_profile(R"({"format":"sentinel-profile","version":1,"period":1,"sampler":"none",
      "phases":[{"duration_ns":0}],"objects":{}})", &q, &err));
  EXPECT_NE(err.find("objects: must be an array"), std::string::npos) << err;
  EXPECT_FALSE(parse_profile("{\"x\":1}", nullptr, &err));
  EXPECT_FALSE(parse_profile("{}", &q, nullptr));  // a null error pointer is allowed
}

// Every prefix of a valid document is invalid, and none of them may crash the reader.
TEST(ProfileIo, EveryTruncationIsRejected) {
  const std::string good = serialize_profile(sample_profile());
  const size_t end = good.rfind('}');
  for (size_t n = 0; n <= end; ++n) {
    StepProfile q;
    std::string err;
    EXPECT_FALSE(parse_profile(std::string_view(good).substr(0, n), &q, &err)) << n;
  }
}

TEST(ProfileIo, InvalidUtf8InProgramIsReplacedNotThrown) {
  StepProfile p = sample_profile();
  p.program = "bad \xff\xfe bytes";
  const std::string text = serialize_profile(p);
  ASSERT_FALSE(text.empty());
  StepProfile q;
  std::string err;
  ASSERT_TRUE(parse_profile(text, &q, &err)) << err;
  EXPECT_EQ(q.program, "bad \xef\xbf\xbd\xef\xbf\xbd bytes");
}

}  // namespace
}  // namespace sentinel
