#include "sampler/perf_ring.h"

#include <cstring>

#include "sampler/emulated_pmu_abi.h"

namespace sentinel {
namespace {

// Sequential reader over a byte range that refuses to read past its end.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool u64(uint64_t* out) { return take(out, 8); }
  bool u32(uint32_t* out) { return take(out, 4); }
  bool skip(size_t n) {
    if (n > n_ - off_) return false;
    off_ += n;
    return true;
  }
  const uint8_t* here() const { return p_ + off_; }

 private:
  bool take(void* out, size_t n) {
    if (n > n_ - off_) return false;
    std::memcpy(out, p_ + off_, n);
    off_ += n;
    return true;
  }
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
};

}  // namespace

int access_kind_from_data_src(uint64_t data_src) {
  if ((data_src & emulated_pmu::kDataSrcWriteback) != 0) return 2;
  const uint64_t op = (data_src >> PERF_MEM_OP_SHIFT) & 0x1f;
  if ((op & PERF_MEM_OP_STORE) != 0) return 1;
  if ((op & PERF_MEM_OP_LOAD) != 0) return 0;
  return -1;
}

bool decode_sample(const uint8_t* body, size_t size, uint64_t t, PerfSample* s) {
  *s = PerfSample{};
  Cursor c(body, size);
  if ((t & PERF_SAMPLE_IDENTIFIER) && !c.u64(&s->id)) return false;
  if ((t & PERF_SAMPLE_IP) && !c.u64(&s->ip)) return false;
  if ((t & PERF_SAMPLE_TID) && !(c.u32(&s->pid) && c.u32(&s->tid))) return false;
  if ((t & PERF_SAMPLE_TIME) && !c.u64(&s->time)) return false;
  if ((t & PERF_SAMPLE_ADDR) && !c.u64(&s->addr)) return false;
  if ((t & PERF_SAMPLE_ID) && !c.u64(&s->id)) return false;
  if ((t & PERF_SAMPLE_STREAM_ID) && !c.u64(&s->stream_id)) return false;
  if (t & PERF_SAMPLE_CPU) {
    uint32_t reserved = 0;
    if (!(c.u32(&s->cpu) && c.u32(&reserved))) return false;
  }
  if ((t & PERF_SAMPLE_PERIOD) && !c.u64(&s->period)) return false;
  if (t & PERF_SAMPLE_RAW) {
    if (!c.u32(&s->raw_size)) return false;
    s->raw = c.here();
    if (!c.skip(s->raw_size)) return false;
  }
  if ((t & PERF_SAMPLE_WEIGHT) && !c.u64(&s->weight)) return false;
  if ((t & PERF_SAMPLE_DATA_SRC) && !c.u64(&s->data_src)) return false;
  return true;
}

bool RingReader::init(perf_event_mmap_page* meta, uint8_t* data, size_t data_size, uint64_t sample_type) {
  if (meta == nullptr || data == nullptr || data_size < sizeof(perf_event_header) ||
      (data_size & (data_size - 1)) != 0 || (sample_type & ~kSupportedSampleType) != 0) {
    return false;
  }
  meta_ = meta;
  data_ = data;
  size_ = data_size;
  sample_type_ = sample_type;
  stats_ = RingStats{};
  return true;
}

void RingReader::dispatch(const perf_event_header& h, const uint8_t* rec, const SampleFn& fn) {
  const uint8_t* body = rec + sizeof h;
  const size_t body_size = h.size - sizeof h;
  switch (h.type) {
    case PERF_RECORD_SAMPLE: {
      PerfSample s;
      if (!decode_sample(body, body_size, sample_type_, &s)) {
        ++stats_.corrupt;
        return;
      }
      ++stats_.samples;
      if (fn) fn(s);
      return;
    }
    case PERF_RECORD_LOST: {  // { u64 id; u64 lost; sample_id }
      uint64_t lost = 0;
      if (body_size < 16) {
        ++stats_.corrupt;
        return;
      }
      std::memcpy(&lost, body + 8, 8);
      ++stats_.lost_records;
      stats_.lost += lost;
      return;
    }
    case PERF_RECORD_THROTTLE:
      ++stats_.throttle;
      return;
    case PERF_RECORD_UNTHROTTLE:
      ++stats_.unthrottle;
      return;
    default:
      ++stats_.other;
      return;
  }
}

size_t RingReader::drain(const SampleFn& fn) {
  if (meta_ == nullptr) return 0;
  const size_t before = stats_.samples;
  const uint64_t head = __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta_->data_tail;  // only this reader writes it
  if (head - tail > size_) {
    // More than a ring's worth outstanding (or head behind tail): the positions are garbage.
    ++stats_.corrupt;
    tail = head;
  }
  const size_t mask = size_ - 1;
  // Copies n bytes starting at ring offset `off`, wrapping at the end of the data area.
  auto copy_out = [&](size_t off, void* dst, size_t n) {
    const size_t first = n < size_ - off ? n : size_ - off;
    std::memcpy(dst, data_ + off, first);
    std::memcpy(static_cast<uint8_t*>(dst) + first, data_, n - first);
  };
  while (tail != head) {
    const uint64_t avail = head - tail;
    const size_t off = static_cast<size_t>(tail) & mask;
    perf_event_header h;
    if (avail < sizeof h) {
      ++stats_.corrupt;
      tail = head;
      break;
    }
    copy_out(off, &h, sizeof h);
    if (h.size < sizeof h || h.size > avail) {
      ++stats_.corrupt;  // cannot find the next record: drop the rest
      tail = head;
      break;
    }
    const uint8_t* rec = data_ + off;
    if (off + h.size > size_) {
      copy_out(off, copy_, h.size);
      rec = copy_;
    }
    dispatch(h, rec, fn);
    stats_.bytes += h.size;
    tail += h.size;
  }
  __atomic_store_n(&meta_->data_tail, tail, __ATOMIC_RELEASE);
  return stats_.samples - before;
}

}  // namespace sentinel
