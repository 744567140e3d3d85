// The writing side of one emulated PMU ring (src/sampler/emulated_pmu_abi.h): the plugin encodes
// samples as PERF_RECORD_SAMPLE records of the registered sample_type into a queue of its own, and
// copies them into the process's ring when the process asks (prepare, then publish), in the kernel's
// ring format: records back to back from data_head, wrapping at the end of the data area, a
// PERF_RECORD_LOST {id, lost} first when samples had to be dropped, data_head advanced last.
//
// Why a queue instead of writing straight into the ring at every sample: the plugin can trust a
// guest page's RAM address only at the moment the guest itself stores to that page (the kernel may
// move pages), so it writes the ring only inside the process's publish request, into the pages the
// process has just marked. The queue holds at most one ring's worth of records (data_bytes): like
// the kernel, which drops samples while the reader has not made room, the writer drops a sample
// when the queue is full and counts it for the next PERF_RECORD_LOST. The reader drains the whole
// ring after every publish, so the queue and the ring together never hold more than a ring's worth.
//
// Every field of a record is 8 bytes (the fields are those of kEmulatedSampleTypes), so records have
// one size and the queue is a ring of records.
//
// Thread safety: none; the registration that owns a writer serialises every call (pmu_registry.h).
// Invariants: queued() <= capacity(); frozen records are the oldest queued ones; head_ only grows.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace sentinel::slowtier {

struct EmulatedSample {
  uint64_t time = 0;       // virtual ns
  uint64_t addr = 0;       // virtual data address
  uint64_t stream_id = 0;  // the process's step clock at the access
  uint32_t cpu = 0;        // vCPU
  uint64_t period = 0;
  uint64_t weight = 0;     // latency ns
  uint64_t data_src = 0;
};

class PmuRingWriter {
 public:
  // Fails on a sample_type with a field outside kEmulatedSampleTypes, or data_bytes that is not a
  // power of two of at least one page.
  bool init(uint64_t sample_type, uint64_t data_bytes);

  uint64_t record_bytes() const { return record_bytes_; }
  uint64_t capacity() const { return capacity_; }  // records the queue holds
  uint64_t queued() const { return count_; }
  uint64_t head() const { return head_; }
  uint64_t dropped_total() const { return dropped_total_; }

  // Queues one sample; false (and counted as lost) when the queue is full.
  bool append(const EmulatedSample& s);

  // Freezes the records the next publish writes: a LOST record if samples were dropped, then as many
  // whole queued records as fit in the ring's free space given the reader's data_tail. A tail that is
  // ahead of the head or more than a ring behind it (the guest wrote garbage) leaves no free space.
  // Returns the bytes frozen; the publish writes them at ring offset head().
  uint64_t prepare(uint64_t data_tail);

  // Writes the frozen bytes at head() through page_of(i), the host address of data page i (4 KiB),
  // or nullptr where the page is not known; then advances head() and returns true. If a needed page
  // is unknown nothing is written, the frozen records stay frozen, and it returns false.
  using PageFn = std::function<unsigned char*(uint64_t page)>;
  bool publish(const PageFn& page_of);
  uint64_t frozen_bytes() const { return frozen_bytes_; }

 private:
  void encode(const EmulatedSample& s, unsigned char* out) const;
  void copy_to_ring(uint64_t offset, const unsigned char* src, uint64_t n, unsigned char* const* pages) const;

  uint64_t sample_type_ = 0;
  uint64_t record_bytes_ = 0;
  uint64_t data_bytes_ = 0;
  uint64_t capacity_ = 0;
  std::vector<unsigned char> queue_;  // capacity_ records
  uint64_t first_ = 0, count_ = 0;    // oldest queued record, records queued
  uint64_t dropped_ = 0;              // since the last LOST record that was published
  uint64_t dropped_total_ = 0;
  uint64_t head_ = 0;
  // Frozen by prepare: the LOST count it will report and the records it will copy.
  uint64_t frozen_lost_ = 0, frozen_records_ = 0, frozen_bytes_ = 0;
};

}  // namespace sentinel::slowtier
