#include "pmu_registry.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>
#include <ctime>

namespace sentinel::slowtier {
namespace {

using namespace emulated_pmu;

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t host_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool has_cookie(const unsigned char* page) {
  return std::memcmp(page + kControlOffset, kControlCookie, sizeof kControlCookie) == 0;
}

EmulatedPmuControl* control_of(unsigned char* page) {
  return reinterpret_cast<EmulatedPmuControl*>(page + kControlOffset);
}

}  // namespace

struct PmuRegistry::Registration {
  std::mutex mu;
  std::atomic<bool> live{false};
  std::atomic<uint64_t> lo{0}, hi{0};  // bounds of all ranges: a lock-free reject for most events
  uint64_t token = 0;
  uint64_t meta_vaddr = 0;  // the ring's first page; data page i is at meta_vaddr + (1 + i) pages
  uint32_t data_pages = 0;
  uint32_t n_ranges = 0;
  AddressRange ranges[kMaxRanges];
  uint64_t period = 1, countdown = 1;
  PmuRingWriter writer;
  unsigned char* control_page = nullptr;  // where the first page was at the last request
  std::vector<unsigned char*> page_host;  // where each data page was when it was last marked
  std::vector<uint64_t> page_sync;        // the prepare it was marked after
  uint64_t sync = 0;                      // prepares so far
  uint64_t last_used = 0;
  uint64_t events = 0, samples = 0, dropped = 0, stale_clock = 0;

  bool in_ranges(uint64_t vaddr) const {
    for (uint32_t i = 0; i < n_ranges; ++i) {
      if (vaddr >= ranges[i].start && vaddr < ranges[i].end) return true;
    }
    return false;
  }
};

PmuRegistry::PmuRegistry(double latency_ns0, double latency_ns1) : latency_ns_{latency_ns0, latency_ns1} {
  for (auto& s : slots_) s = std::make_unique<Registration>();
}

PmuRegistry::~PmuRegistry() = default;

PmuRegistry::Registration* PmuRegistry::find(uint64_t token) {
  if (token == 0) return nullptr;
  for (auto& s : slots_) {
    if (!s->live.load(std::memory_order_acquire)) continue;
    s->mu.lock();
    if (s->live.load(std::memory_order_relaxed) && s->token == token) return s.get();
    s->mu.unlock();
  }
  return nullptr;
}

bool PmuRegistry::on_marked_store(uint64_t vaddr, unsigned char* page) {
  const uint64_t off = vaddr & (kPageBytes - 1);
  const uint64_t page_vaddr = vaddr - off;
  if (off == kControlOffset + offsetof(EmulatedPmuControl, request_seq) && has_cookie(page)) {
    answer(page, page_vaddr);
    return true;
  }
  if (off % 8 != 0 || !active()) return false;
  uint64_t value;
  std::memcpy(&value, page + off, sizeof value);
  Registration* r = find(value);
  if (r == nullptr) return false;
  const uint64_t first = r->meta_vaddr + kPageBytes;
  const bool ours = page_vaddr >= first && page_vaddr < first + uint64_t{r->data_pages} * kPageBytes;
  if (ours) {
    const uint64_t i = (page_vaddr - first) / kPageBytes;
    r->page_host[i] = page;
    r->page_sync[i] = r->sync;
  }
  r->mu.unlock();
  return ours;
}

void PmuRegistry::answer(unsigned char* page, uint64_t meta_vaddr) {
  EmulatedPmuControl* ctl = control_of(page);
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(page);
  requests_.fetch_add(1, std::memory_order_relaxed);
  int32_t status = kOk;
  Registration* r = nullptr;
  const uint32_t op = ctl->op;
  if (op == kProbe) {
    // The answer alone says a plugin is there.
  } else if (op == kRegister) {
    const uint32_t pages = ctl->data_pages;
    const uint32_t n = ctl->n_ranges;
    bool ok = ctl->abi == kAbi && pages >= 1 && pages <= kMaxDataPages && (pages & (pages - 1)) == 0 &&
              ctl->sample_type != 0 && (ctl->sample_type & ~kEmulatedSampleTypes) == 0 &&
              ctl->sample_period >= 1 && n >= 1 && n <= kMaxRanges;
    for (uint32_t i = 0; ok && i < n; ++i) {
      ok = ctl->ranges[i].start < ctl->ranges[i].end && ctl->ranges[i].end <= kUserAddressLimit;
    }
    if (!ok) {
      status = kBadRequest;
    } else {
      std::lock_guard<std::mutex> choose(register_mu_);
      Registration* slot = nullptr;
      for (auto& s : slots_) {  // a free slot, else the least recently used one
        if (!s->live.load(std::memory_order_acquire)) {
          slot = s.get();
          break;
        }
        if (slot == nullptr || s->last_used < slot->last_used) slot = s.get();
      }
      slot->mu.lock();
      r = slot;
      const bool was_live = r->live.load(std::memory_order_relaxed);
      r->live.store(false, std::memory_order_release);  // events skip it while it changes
      if (!r->writer.init(ctl->sample_type, uint64_t{pages} * kPageBytes)) {
        status = kBadRequest;
        if (was_live) live_.fetch_sub(1, std::memory_order_relaxed);
        r->mu.unlock();
        r = nullptr;
      } else {
        r->token = mix64(registrations_.fetch_add(1, std::memory_order_relaxed) ^ host_ns() ^ meta_vaddr) | 1;
        r->meta_vaddr = meta_vaddr;
        r->data_pages = pages;
        r->n_ranges = n;
        uint64_t lo = ~uint64_t{0}, hi = 0;
        for (uint32_t i = 0; i < n; ++i) {
          r->ranges[i] = ctl->ranges[i];
          lo = std::min(lo, r->ranges[i].start);
          hi = std::max(hi, r->ranges[i].end);
        }
        r->lo.store(lo, std::memory_order_relaxed);
        r->hi.store(hi, std::memory_order_relaxed);
        r->period = r->countdown = ctl->sample_period;
        r->page_host.assign(pages, nullptr);
        r->page_sync.assign(pages, ~uint64_t{0});
        r->sync = 0;
        r->events = r->samples = r->dropped = r->stale_clock = 0;
        ctl->token = r->token;
        meta->data_offset = kPageBytes;
        meta->data_size = uint64_t{pages} * kPageBytes;
        __atomic_store_n(&meta->data_head, 0, __ATOMIC_RELEASE);
        r->live.store(true, std::memory_order_release);
        if (!was_live) live_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  } else if (op == kPrepare || op == kPublish || op == kUnregister) {
    r = find(ctl->token);
    if (r != nullptr && r->meta_vaddr != meta_vaddr) {
      r->mu.unlock();
      r = nullptr;
    }
    if (r == nullptr) {
      status = kUnknownToken;
    } else if (op == kPrepare) {
      const uint64_t tail = __atomic_load_n(&meta->data_tail, __ATOMIC_ACQUIRE);
      const uint64_t bytes = r->writer.prepare(tail);
      ++r->sync;
      ctl->publish_head = r->writer.head();
      ctl->publish_bytes = bytes;
    } else if (op == kPublish) {
      const uint64_t bytes = r->writer.frozen_bytes();
      const bool published = r->writer.publish([r](uint64_t i) -> unsigned char* {
        return i < r->page_host.size() && r->page_sync[i] == r->sync ? r->page_host[i] : nullptr;
      });
      if (published) {
        published_bytes_.fetch_add(bytes, std::memory_order_relaxed);
        __atomic_store_n(&meta->data_head, r->writer.head(), __ATOMIC_RELEASE);
      } else {
        missing_pages_.fetch_add(1, std::memory_order_relaxed);
        status = kMissingPages;
      }
    } else {
      r->live.store(false, std::memory_order_release);
      live_.fetch_sub(1, std::memory_order_relaxed);
      r->writer = PmuRingWriter();
      r->page_host.clear();
      r->page_sync.clear();
    }
  } else {
    status = kBadRequest;
  }
  if (r != nullptr) {
    r->control_page = page;
    r->last_used = clock_.fetch_add(1, std::memory_order_relaxed) + 1;
    ctl->events_in_ranges = r->events;
    ctl->samples_queued = r->samples;
    ctl->samples_dropped = r->dropped;
    ctl->stale_clock = r->stale_clock;
    r->mu.unlock();
  }
  ctl->abi = kAbi;
  ctl->status = status;
  __atomic_store_n(&ctl->response_seq, __atomic_load_n(&ctl->request_seq, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
}

void PmuRegistry::on_event(unsigned vcpu, uint64_t vaddr, EventKind kind, int node, uint64_t now_ns) {
  if (vaddr == 0 || vaddr >= kUserAddressLimit) return;
  for (auto& s : slots_) {
    Registration& r = *s;
    if (!r.live.load(std::memory_order_acquire)) continue;
    if (vaddr < r.lo.load(std::memory_order_relaxed) || vaddr >= r.hi.load(std::memory_order_relaxed)) continue;
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.live.load(std::memory_order_relaxed) || !r.in_ranges(vaddr)) continue;
    // The step clock as the process last wrote it, read where its page was at the last request. It
    // is also the switch: 0 means the process is not sampling now. If the cookie is no longer there
    // the page has moved since: the clock is unknown and the event is lost (counted).
    uint64_t clock = 0;
    if (r.control_page != nullptr && has_cookie(r.control_page)) {
      clock = __atomic_load_n(&control_of(r.control_page)->step_clock, __ATOMIC_RELAXED);
      if (clock == 0) continue;
    } else {
      ++r.stale_clock;
      continue;
    }
    ++r.events;
    if (--r.countdown != 0) continue;
    r.countdown = r.period;
    EmulatedSample sample;
    sample.time = now_ns;
    sample.addr = vaddr;
    sample.stream_id = clock;
    sample.cpu = vcpu;
    sample.period = r.period;
    sample.weight = static_cast<uint64_t>(latency_ns_[node == 0 ? 0 : 1]);
    sample.data_src = data_src_of(kind, node);
    if (r.writer.append(sample)) {
      ++r.samples;
      samples_.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++r.dropped;
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

PmuTotals PmuRegistry::totals() const {
  PmuTotals t;
  t.registrations = registrations_.load(std::memory_order_relaxed);
  t.requests = requests_.load(std::memory_order_relaxed);
  t.samples = samples_.load(std::memory_order_relaxed);
  t.dropped = dropped_.load(std::memory_order_relaxed);
  t.published_bytes = published_bytes_.load(std::memory_order_relaxed);
  t.missing_pages = missing_pages_.load(std::memory_order_relaxed);
  return t;
}

}  // namespace sentinel::slowtier
