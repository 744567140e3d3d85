#include "pmu_ring_writer.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>

#include "sampler/emulated_pmu_abi.h"

namespace sentinel::slowtier {
namespace {

using emulated_pmu::kPageBytes;

constexpr uint64_t kLostRecordBytes = sizeof(perf_event_header) + 16;  // {u64 id; u64 lost;}

void put64(unsigned char*& p, uint64_t v) {
  std::memcpy(p, &v, 8);
  p += 8;
}

}  // namespace

bool PmuRingWriter::init(uint64_t sample_type, uint64_t data_bytes) {
  if ((sample_type & ~emulated_pmu::kEmulatedSampleTypes) != 0 || sample_type == 0) return false;
  if (data_bytes < kPageBytes || (data_bytes & (data_bytes - 1)) != 0) return false;
  sample_type_ = sample_type;
  record_bytes_ = sizeof(perf_event_header) + 8 * static_cast<uint64_t>(__builtin_popcountll(sample_type));
  data_bytes_ = data_bytes;
  capacity_ = data_bytes / record_bytes_;
  queue_.assign(capacity_ * record_bytes_, 0);
  first_ = count_ = dropped_ = dropped_total_ = head_ = 0;
  frozen_lost_ = frozen_records_ = frozen_bytes_ = 0;
  return true;
}

// The kernel's order of the fields (perf_event_open(2), "sample_type"); TID is {u32 pid, u32 tid}
// and CPU {u32 cpu, u32 res}, 8 bytes each.
void PmuRingWriter::encode(const EmulatedSample& s, unsigned char* out) const {
  perf_event_header h;
  h.type = PERF_RECORD_SAMPLE;
  h.misc = PERF_RECORD_MISC_USER;
  h.size = static_cast<uint16_t>(record_bytes_);
  std::memcpy(out, &h, sizeof h);
  unsigned char* p = out + sizeof h;
  const uint64_t t = sample_type_;
  if (t & PERF_SAMPLE_IP) put64(p, 0);
  if (t & PERF_SAMPLE_TID) put64(p, 0);
  if (t & PERF_SAMPLE_TIME) put64(p, s.time);
  if (t & PERF_SAMPLE_ADDR) put64(p, s.addr);
  if (t & PERF_SAMPLE_STREAM_ID) put64(p, s.stream_id);
  if (t & PERF_SAMPLE_CPU) put64(p, s.cpu);  // {u32 cpu, u32 res = 0}, little-endian
  if (t & PERF_SAMPLE_PERIOD) put64(p, s.period);
  if (t & PERF_SAMPLE_WEIGHT) put64(p, s.weight);
  if (t & PERF_SAMPLE_DATA_SRC) put64(p, s.data_src);
}

bool PmuRingWriter::append(const EmulatedSample& s) {
  if (capacity_ == 0 || count_ == capacity_) {
    ++dropped_;
    ++dropped_total_;
    return false;
  }
  const uint64_t slot = (first_ + count_) % capacity_;
  encode(s, &queue_[slot * record_bytes_]);
  ++count_;
  return true;
}

uint64_t PmuRingWriter::prepare(uint64_t data_tail) {
  frozen_lost_ = frozen_records_ = frozen_bytes_ = 0;
  if (capacity_ == 0) return 0;
  const uint64_t used = head_ - data_tail;
  if (data_tail > head_ || used > data_bytes_) return 0;
  uint64_t room = data_bytes_ - used;
  if (dropped_ > 0) {
    if (room < kLostRecordBytes) return 0;
    frozen_lost_ = dropped_;
    room -= kLostRecordBytes;
    frozen_bytes_ = kLostRecordBytes;
  }
  frozen_records_ = std::min(count_, room / record_bytes_);
  frozen_bytes_ += frozen_records_ * record_bytes_;
  return frozen_bytes_;
}

void PmuRingWriter::copy_to_ring(uint64_t offset, const unsigned char* src, uint64_t n,
                                 unsigned char* const* pages) const {
  const uint64_t first_page = head_ / kPageBytes;
  while (n > 0) {
    const uint64_t in_page = offset % kPageBytes;
    const uint64_t chunk = std::min(n, kPageBytes - in_page);
    // pages[] is indexed by the page's distance from head_'s page (publish gathered them so); the
    // data area is a whole number of pages, so a wrap is a page boundary.
    std::memcpy(pages[offset / kPageBytes - first_page] + in_page, src, chunk);
    src += chunk;
    offset += chunk;
    n -= chunk;
  }
}

bool PmuRingWriter::publish(const PageFn& page_of) {
  if (frozen_bytes_ == 0) return true;
  // Every page the frozen bytes touch must be known before anything is written.
  const uint64_t pages_in_ring = data_bytes_ / kPageBytes;
  const uint64_t first_page = head_ / kPageBytes, last_page = (head_ + frozen_bytes_ - 1) / kPageBytes;
  std::vector<unsigned char*> pages(last_page - first_page + 1);
  for (uint64_t p = first_page; p <= last_page; ++p) {
    unsigned char* host = page_of(p % pages_in_ring);
    if (host == nullptr) return false;
    pages[p - first_page] = host;
  }
  uint64_t offset = head_;
  if (frozen_lost_ > 0) {
    unsigned char rec[kLostRecordBytes];
    perf_event_header h;
    h.type = PERF_RECORD_LOST;
    h.misc = 0;
    h.size = static_cast<uint16_t>(kLostRecordBytes);
    std::memcpy(rec, &h, sizeof h);
    const uint64_t id = 0, lost = frozen_lost_;
    std::memcpy(rec + sizeof h, &id, 8);
    std::memcpy(rec + sizeof h + 8, &lost, 8);
    copy_to_ring(offset, rec, kLostRecordBytes, pages.data());
    offset += kLostRecordBytes;
    dropped_ -= frozen_lost_;
  }
  for (uint64_t i = 0; i < frozen_records_; ++i) {
    copy_to_ring(offset, &queue_[((first_ + i) % capacity_) * record_bytes_], record_bytes_, pages.data());
    offset += record_bytes_;
  }
  first_ = (first_ + frozen_records_) % capacity_;
  count_ -= frozen_records_;
  head_ = offset;
  frozen_lost_ = frozen_records_ = frozen_bytes_ = 0;
  return true;
}

}  // namespace sentinel::slowtier
