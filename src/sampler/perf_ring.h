// Reader of a perf_event ring buffer (the mmap of a sampling perf event), following the kernel's
// protocol: load data_head with acquire ordering, consume records from data_tail up to it, copy a
// record that wraps around the end of the data area into a private buffer, then store data_tail with
// release ordering so the kernel may reuse the space.
//
// It works on any memory region, so tests feed synthetic rings. Every length comes from untrusted
// memory and is bounded before use: a record header whose size is below the header size, beyond the
// bytes available, or a sample body shorter than its sample_type implies is counted as corrupt and
// never read past. On a corrupt header the reader skips everything up to data_head (the record stream
// cannot be resynchronised) and counts it.
//
// Thread safety: one RingReader per ring, used by one thread at a time.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace sentinel {

// One decoded PERF_RECORD_SAMPLE. Fields not in the sample_type are 0.
struct PerfSample {
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  uint64_t weight = 0;
  uint64_t data_src = 0;
  const uint8_t* raw = nullptr;  // PERF_SAMPLE_RAW payload; valid only during the callback
  uint32_t raw_size = 0;
};

// Access kind from data_src (PERF_MEM_OP_*): -1 unknown, 0 load, 1 store, 2 write-back of a dirty
// line (the emulated PMU's encoding, sampler/emulated_pmu_abi.h: no hardware PMU reports these).
int access_kind_from_data_src(uint64_t data_src);

struct RingStats {
  uint64_t samples = 0;
  uint64_t lost = 0;         // samples the kernel dropped (sum of PERF_RECORD_LOST counts)
  uint64_t lost_records = 0; // PERF_RECORD_LOST records
  uint64_t throttle = 0;     // PERF_RECORD_THROTTLE
  uint64_t unthrottle = 0;   // PERF_RECORD_UNTHROTTLE
  uint64_t other = 0;        // other record types, skipped
  uint64_t corrupt = 0;      // malformed records or ring states; see the header comment
  uint64_t bytes = 0;        // bytes consumed

  RingStats& operator+=(const RingStats& o) {
    samples += o.samples;
    lost += o.lost;
    lost_records += o.lost_records;
    throttle += o.throttle;
    unthrottle += o.unthrottle;
    other += o.other;
    corrupt += o.corrupt;
    bytes += o.bytes;
    return *this;
  }
};

// The sample_type bits the decoder understands. Others (READ, CALLCHAIN, BRANCH_STACK, REGS, ...)
// are rejected by RingReader::init, because their variable layout would have to be decoded to find
// the fields after them.
inline constexpr uint64_t kSupportedSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
    PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW |
    PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC;

// Decodes the body of a PERF_RECORD_SAMPLE (the bytes after the header). False if it is too short
// for `sample_type` or a RAW size points past its end.
bool decode_sample(const uint8_t* body, size_t size, uint64_t sample_type, PerfSample* out);

class RingReader {
 public:
  using SampleFn = std::function<void(const PerfSample&)>;

  // `meta` is the first page of the mapping (struct perf_event_mmap_page); `data` and `data_size`
  // the data area (a power of two). Fails (returns false) on an unsupported sample_type or a bad size.
  bool init(perf_event_mmap_page* meta, uint8_t* data, size_t data_size, uint64_t sample_type);

  // Consumes every record present now; calls `fn` for each valid sample. Returns the samples seen.
  size_t drain(const SampleFn& fn);

  const RingStats& stats() const { return stats_; }

 private:
  void dispatch(const perf_event_header& h, const uint8_t* rec, const SampleFn& fn);

  perf_event_mmap_page* meta_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  uint64_t sample_type_ = 0;
  RingStats stats_;
  // A record is at most 65535 bytes (header.size is 16 bits); wrapped records are copied here.
  alignas(8) uint8_t copy_[65536];
};

}  // namespace sentinel
