#include "sampler/perf_ring.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace sentinel {
namespace {

constexpr uint64_t kType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;

// A synthetic ring: the kernel's side of the protocol, written by the test.
struct FakeRing {
  explicit FakeRing(size_t size) : data(size, 0) { std::memset(&meta, 0, sizeof meta); }
  void start_at(uint64_t pos) { meta.data_head = meta.data_tail = head = pos; }
  void put(const void* bytes, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(bytes);
    for (size_t i = 0; i < n; ++i) data[(head + i) % data.size()] = b[i];
    head += n;
  }
  void record(uint32_t type, const std::vector<uint64_t>& body, int size_override = -1) {
    perf_event_header h;
    h.type = type;
    h.misc = 0;
    h.size = static_cast<uint16_t>(size_override >= 0 ? size_override : sizeof h + 8 * body.size());
    put(&h, sizeof h);
    put(body.data(), 8 * body.size());
  }
  void sample(uint64_t ip, uint32_t pid, uint32_t tid, uint64_t time, uint64_t addr) {
    record(PERF_RECORD_SAMPLE, {ip, uint64_t{tid} << 32 | pid, time, addr});
  }
  void publish() { __atomic_store_n(&meta.data_head, head, __ATOMIC_RELEASE); }

  perf_event_mmap_page meta;
  std::vector<uint8_t> data;
  uint64_t head = 0;
};

std::vector<PerfSample> drain_all(RingReader& r) {
  std::vector<PerfSample> out;
  r.drain([&](const PerfSample& s) { out.push_back(s); });
  return out;
}

TEST(PerfRing, DecodesSamplesAndAdvancesTail) {
  FakeRing ring(256);
  RingReader r;
  ASSERT_TRUE(r.init(&ring.meta, ring.data.data(), ring.data.size(), kType));
  ring.sample(0x401000, 10, 11, 1000, 0x7f0000001000);
  ring.sample(0x401008, 10, 12, 2000, 0x7f0000002000);
  ring.publish();
  const auto s = drain_all(r);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].ip, 0x401000u);
  EXPECT_EQ(s[0].pid, 10u);
  EXPECT_EQ(s[0].tid, 11u);
  EXPECT_EQ(s[0].time, 1000u);
  EXPECT_EQ(s[0].addr, 0x7f0000001000u);
  EXPECT_EQ(s[1].tid, 12u);
  EXPECT_EQ(ring.meta.data_tail, ring.head);
  EXPECT_EQ(r.stats().bytes, 80u);
  EXPECT_EQ(drain_all(r).size(), 0u);  // nothing new
}

TEST(PerfRing, CopiesRecordsThatWrapAroundTheEnd) {
  FakeRing ring(128);
  RingReader r;
  ASSERT_TRUE(r.init(&ring.meta, ring.data.data(), ring.data.size(), kType));
  for (uint64_t start : {120u, 124u, 126u, 127u, 1000u * 128 + 100}) {  // header or body straddles the end
    ring.start_at(start);
    ring.sample(0xabc, 1, 2, start, 0xdead0000 + start);
    ring.sample(0xdef, 1, 3, start + 1, 0xbeef0000);
    ring.publish();
    const auto s = drain_all(r);
    ASSERT_EQ(s.size(), 2u) << start;
    EXPECT_EQ(s[0].addr, 0xdead0000 + start);
    EXPECT_EQ(s[0].time, start);
    EXPECT_EQ(s[1].tid, 3u);
    EXPECT_EQ(ring.meta.data_tail, ring.head);
  }
  EXPECT_EQ(r.stats().corrupt, 0u);
}

TEST(PerfRing, CountsLostThrottleAndOtherRecords) {
  FakeRing ring(512);
  RingReader r;
  ASSERT_TRUE(r.init(&ring.meta, ring.data.data(), ring.data.size(), kType));
  ring.record(PERF_RECORD_LOST, {7, 40});
  ring.record(PERF_RECORD_LOST, {7, 2});
  ring.record(PERF_RECORD_THROTTLE, {5, 7, 7});
  ring.record(PERF_RECORD_UNTHROTTLE, {6, 7, 7});
  ring.record(PERF_RECORD_COMM, {1, 2});
  ring.sample(1, 2, 3, 4, 5);
  ring.publish();
  EXPECT_EQ(drain_all(r).size(), 1u);
  EXPECT_EQ(r.stats().lost, 42u);
  EXPECT_EQ(r.stats().lost_records, 2u);
  EXPECT_EQ(r.stats().throttle, 1u);
  EXPECT_EQ(r.stats().unthrottle, 1u);
  EXPECT_EQ(r.stats().other, 1u);
  EXPECT_EQ(r.stats().corrupt, 0u);
}

TEST(PerfRing, ShortSampleBodyIsCorruptButTheNextRecordIsRead) {
  FakeRing ring(256);
  RingReader r;
  ASSERT_TRUE(r.init(&ring.meta, ring.data.data(), ring.data.size(), kType));
  ring.record(PERF_RECORD_SAMPLE, {1, 2});  // needs 4 words
  ring.record(PERF_RECORD_LOST, {1});       // needs 2 words
  ring.sample(9, 9, 9, 9, 9);
  ring.publish();
  const auto s = drain_all(r);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].addr, 9u);
  EXPECT_EQ(r.stats().corrupt, 2u);
}

TEST(PerfRing, BadHeadersDropTheRestWithoutReadingPastIt) {
  FakeRing ring(256);
  RingReader r;
  ASSERT_TRUE(r.init(&ring.meta, ring.data.data(), ring.data.size(), kType));
  ring.sample(1, 1, 1, 1, 1);
  ring.record(PERF_RECORD_SAMPLE, {1, 2, 3, 4}, /*size=*/0);  // zero size: would loop forever
  ring.sample(2, 2, 2, 2, 2);
  ring.publish();
  EXPECT_EQ(drain_all(r).size(), 1u);
  EXPECT_EQ(r.stats().corrupt, 1u);
  EXPECT_EQ(ring.meta.data_tail, ring.head);

  ring.record(PERF_RECORD_SAMPLE, {1, 2, 3, 4}, /*size=*/200);  // beyond the published data
  ring.publish();
  EXPECT_EQ(drain_all(r).size(), 0u);
  EXPECT_EQ(r.stats().corrupt, 2u);

  const uint32_t partial = 0;  // 4 bytes: less than a header
  ring.put(&partial, 4);
  ring.publish();
  EXPECT_EQ(drain_all(r).size(), 0u);
  EXPECT_EQ(r.stats().corrupt, 3u);

  ring.meta.data_head = ring.meta.data_tail + 4096;  // more than a ring's worth outstanding
  EXPECT_EQ(drain_all(r).size(), 0u);
  EXPECT_EQ(r.stats().corrupt, 4u);
  EXPECT_EQ(ring.meta.data_tail, ring.meta.data_head);
  ring.meta.data_head = ring.meta.data_tail - 8;  // head behind tail
  EXPECT_EQ(drain_all(r).size(), 0u);
  EXPECT_EQ(r.stats().corrupt, 5u);
}

TEST(PerfRing, DecodesOptionalFieldsAndRaw) {
  const uint64_t type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CPU |
                        PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC;
  std::vector<uint8_t> body;
  auto put64 = [&](uint64_t v) { body.insert(body.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8); };
  auto put32 = [&](uint32_t v) { body.insert(body.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); };
  put64(77);                          // identifier
  put64(0x1234);                      // ip
  put32(5); put32(6);                 // pid, tid
  put32(3); put32(0);                 // cpu, res
  put64(1000);                        // period
  put32(12); put32(0xaa); put64(0xbb);  // raw: size 12, data
  put64(250);                         // weight
  put64(uint64_t{PERF_MEM_OP_STORE} << PERF_MEM_OP_SHIFT);
  PerfSample s;
  ASSERT_TRUE(decode_sample(body.data(), body.size(), type, &s));
  EXPECT_EQ(s.id, 77u);
  EXPECT_EQ(s.ip, 0x1234u);
  EXPECT_EQ(s.tid, 6u);
  EXPECT_EQ(s.cpu, 3u);
  EXPECT_EQ(s.period, 1000u);
  ASSERT_EQ(s.raw_size, 12u);
  uint32_t first;
  std::memcpy(&first, s.raw, 4);
  EXPECT_EQ(first, 0xaau);
  EXPECT_EQ(s.weight, 250u);
  EXPECT_EQ(access_kind_from_data_src(s.data_src), 1);
  EXPECT_EQ(access_kind_from_data_src(uint64_t{PERF_MEM_OP_LOAD} << PERF_MEM_OP_SHIFT), 0);
  EXPECT_EQ(access_kind_from_data_src(0), -1);
  // A RAW size that points past the body.
  std::vector<uint8_t> bad(body.begin(), body.begin() + 40);
  uint32_t huge = 0xffffffff;
  std::memcpy(bad.data() + 32, &huge, 4);
  EXPECT_FALSE(decode_sample(bad.data(), bad.size(), type, &s));
  for (size_t n = 0; n < body.size(); ++n) EXPECT_FALSE(decode_sample(body.data(), n, type, &s)) << n;
}

TEST(PerfRing, InitRejectsWhatItCannotDecode) {
  FakeRing ring(256);
  RingReader r;
  EXPECT_FALSE(r.init(&ring.meta, ring.data.data(), 256, kType | PERF_SAMPLE_CALLCHAIN));
  EXPECT_FALSE(r.init(&ring.meta, ring.data.data(), 200, kType));
  EXPECT_FALSE(r.init(nullptr, ring.data.data(), 256, kType));
  EXPECT_EQ(r.drain(nullptr), 0u);  // uninitialised: no-op
}

TEST(PerfRing, RandomGarbageNeverCrashes) {
  std::mt19937_64 rng(12345);
  FakeRing ring(1024);
  RingReader r;
  ASSERT_TRUE(r.init(&ring.meta, ring.data.data(), ring.data.size(), kType | PERF_SAMPLE_RAW));
  for (int round = 0; round < 20000; ++round) {
    for (auto& b : ring.data) b = static_cast<uint8_t>(rng());
    // Mostly plausible positions, sometimes wild ones.
    const uint64_t tail = rng() % 4096;
    ring.meta.data_tail = tail;
    ring.meta.data_head = round % 7 == 0 ? rng() : tail + rng() % 1100;
    r.drain([](const PerfSample& s) { (void)s.addr; });
    EXPECT_EQ(ring.meta.data_tail, ring.meta.data_head);
  }
  EXPECT_GT(r.stats().corrupt, 0u);
}

}  // namespace
}  // namespace sentinel
