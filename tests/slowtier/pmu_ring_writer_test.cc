// The emulated PMU's ring writer (tools/qemu-slowtier/pmu_ring_writer.h): what it publishes is read by
// the real RingReader (src/sampler/perf_ring.h), the decoder of the kernel's rings.
#include "pmu_ring_writer.h"

#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "sampler/emulated_pmu_abi.h"
#include "sampler/perf_ring.h"

namespace sentinel::slowtier {
namespace {

using emulated_pmu::EventKind;
using emulated_pmu::kPageBytes;
using emulated_pmu::kProfilerSampleType;

// A ring laid out as the process maps it: the first page, then the data pages.
struct Ring {
  explicit Ring(uint64_t data_bytes) : bytes(data_bytes), mem(kPageBytes + data_bytes) {
    reader_ok = reader.init(meta(), data(), data_bytes, kProfilerSampleType);
  }
  perf_event_mmap_page* meta() { return reinterpret_cast<perf_event_mmap_page*>(mem.data()); }
  unsigned char* data() { return reinterpret_cast<unsigned char*>(mem.data()) + kPageBytes; }
  PmuRingWriter::PageFn pages() {
    return [this](uint64_t i) { return data() + i * kPageBytes; };
  }
  // prepare + publish as the plugin does on the process's requests, then the reader's drain.
  std::vector<PerfSample> sync(PmuRingWriter& w) {
    w.prepare(meta()->data_tail);
    EXPECT_TRUE(w.publish(pages()));
    meta()->data_head = w.head();
    std::vector<PerfSample> out;
    reader.drain([&](const PerfSample& s) { out.push_back(s); });
    return out;
  }
  uint64_t bytes;
  std::vector<uint64_t> mem;  // 8-byte aligned
  RingReader reader;
  bool reader_ok = false;
};

EmulatedSample sample(uint64_t addr, uint64_t clock, EventKind kind = EventKind::kLoadMiss, int node = 0) {
  EmulatedSample s;
  s.time = addr * 3;
  s.addr = addr;
  s.stream_id = clock;
  s.cpu = 1;
  s.period = 1;
  s.data_src = emulated_pmu::data_src_of(kind, node);
  return s;
}

TEST(PmuRingWriter, RecordsAreDecodedByTheKernelRingReader) {
  Ring ring(kPageBytes);
  ASSERT_TRUE(ring.reader_ok);
  PmuRingWriter w;
  ASSERT_TRUE(w.init(kProfilerSampleType, ring.bytes));
  EXPECT_EQ(w.record_bytes(), 48u);  // header + TIME ADDR STREAM_ID CPU DATA_SRC
  ASSERT_TRUE(w.append(sample(0x1000, 7)));
  ASSERT_TRUE(w.append(sample(0x2040, 8, EventKind::kStoreMiss, 1)));
  ASSERT_TRUE(w.append(sample(0x3080, 9, EventKind::kWriteback, 1)));
  const auto got = ring.sync(w);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].addr, 0x1000u);
  EXPECT_EQ(got[0].time, 0x3000u);
  EXPECT_EQ(got[0].stream_id, 7u);
  EXPECT_EQ(got[0].cpu, 1u);
  EXPECT_EQ(access_kind_from_data_src(got[0].data_src), 0);
  EXPECT_EQ(emulated_pmu::node_of_data_src(got[0].data_src), 0);
  EXPECT_EQ(access_kind_from_data_src(got[1].data_src), 1);
  EXPECT_EQ(emulated_pmu::node_of_data_src(got[1].data_src), 1);
  EXPECT_EQ(access_kind_from_data_src(got[2].data_src), 2);
  EXPECT_EQ(got[2].stream_id, 9u);
  EXPECT_EQ(ring.reader.stats().corrupt, 0u);
  EXPECT_EQ(ring.reader.stats().lost, 0u);
  EXPECT_EQ(ring.meta()->data_tail, 3 * 48u);
}

TEST(PmuRingWriter, RecordsWrapAroundTheEndOfTheRing) {
  Ring ring(kPageBytes);  // 85 records of 48 bytes fit, with 16 bytes to spare: records straddle the end
  PmuRingWriter w;
  ASSERT_TRUE(w.init(kProfilerSampleType, ring.bytes));
  uint64_t next = 0, seen = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 37; ++i, ++next) ASSERT_TRUE(w.append(sample(0x10000 + 64 * next, next + 1)));
    for (const PerfSample& s : ring.sync(w)) {
      EXPECT_EQ(s.addr, 0x10000 + 64 * seen);
      EXPECT_EQ(s.stream_id, seen + 1);
      ++seen;
    }
  }
  EXPECT_EQ(seen, next);
  EXPECT_GT(ring.meta()->data_head, 5 * ring.bytes);  // went round several times
  EXPECT_EQ(ring.reader.stats().corrupt, 0u);
}

TEST(PmuRingWriter, AFullQueueDropsAndReportsLostLikeTheKernel) {
  Ring ring(kPageBytes);
  PmuRingWriter w;
  ASSERT_TRUE(w.init(kProfilerSampleType, ring.bytes));
  const uint64_t cap = w.capacity();
  ASSERT_EQ(cap, kPageBytes / 48);
  for (uint64_t i = 0; i < cap; ++i) ASSERT_TRUE(w.append(sample(0x1000 + i * 64, 1)));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(w.append(sample(0x9000, 1)));
  EXPECT_EQ(w.dropped_total(), 5u);
  // The LOST record comes first and takes room: one sample waits for the next publish.
  auto got = ring.sync(w);
  EXPECT_EQ(ring.reader.stats().lost, 5u);
  EXPECT_EQ(ring.reader.stats().lost_records, 1u);
  EXPECT_EQ(got.size() + w.queued(), cap);
  got = ring.sync(w);
  EXPECT_EQ(w.queued(), 0u);
  EXPECT_EQ(ring.reader.stats().samples, cap);
  EXPECT_EQ(ring.reader.stats().lost, 5u);  // reported once
}

TEST(PmuRingWriter, AReaderThatDoesNotConsumeGetsNothingMore) {
  Ring ring(kPageBytes);
  PmuRingWriter w;
  ASSERT_TRUE(w.init(kProfilerSampleType, ring.bytes));
  for (uint64_t i = 0; i < w.capacity(); ++i) w.append(sample(0x1000, 1));
  EXPECT_EQ(w.prepare(0), w.capacity() * 48);
  ASSERT_TRUE(w.publish(ring.pages()));
  w.append(sample(0x2000, 2));
  EXPECT_EQ(w.prepare(0), 0u);          // the tail has not moved: no room
  EXPECT_EQ(w.prepare(w.head() + 64), 0u);  // a tail ahead of the head is garbage: no room either
  EXPECT_EQ(w.prepare(w.head()), 48u);
}

TEST(PmuRingWriter, PublishWritesNothingWhenAPageIsUnknown) {
  Ring ring(4 * kPageBytes);
  PmuRingWriter w;
  ASSERT_TRUE(w.init(kProfilerSampleType, ring.bytes));
  for (int i = 0; i < 200; ++i) w.append(sample(0x1000 + 64 * i, 1));  // 9600 bytes: pages 0..2
  ASSERT_EQ(w.prepare(0), 9600u);
  std::memset(ring.data(), 0xab, ring.bytes);
  EXPECT_FALSE(w.publish([&](uint64_t i) { return i == 1 ? nullptr : ring.data() + i * kPageBytes; }));
  for (uint64_t i = 0; i < ring.bytes; ++i) ASSERT_EQ(ring.data()[i], 0xab) << i;
  EXPECT_EQ(w.head(), 0u);
  EXPECT_EQ(w.frozen_bytes(), 9600u);  // still frozen: the next publish writes them
  EXPECT_TRUE(w.publish(ring.pages()));
  ring.meta()->data_head = w.head();
  EXPECT_EQ(ring.reader.drain(nullptr), 200u);
}

TEST(PmuRingWriter, InitRejectsWhatTheRingCannotCarry) {
  PmuRingWriter w;
  EXPECT_FALSE(w.init(kProfilerSampleType | PERF_SAMPLE_RAW, kPageBytes));  // variable size
  EXPECT_FALSE(w.init(kProfilerSampleType | PERF_SAMPLE_CALLCHAIN, kPageBytes));
  EXPECT_FALSE(w.init(0, kPageBytes));
  EXPECT_FALSE(w.init(kProfilerSampleType, 3 * kPageBytes));
  EXPECT_FALSE(w.init(kProfilerSampleType, 1024));
  EXPECT_TRUE(w.init(emulated_pmu::kEmulatedSampleTypes, kPageBytes));
  EXPECT_EQ(w.record_bytes(), 8u + 9 * 8);
}

}  // namespace
}  // namespace sentinel::slowtier
