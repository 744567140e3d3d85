#include "sampler/emulated_pmu.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "os/os.h"
#include "os/slowtier_mailbox.h"

namespace sentinel {
namespace {

// (emulated_pmu::Status, the plugin's answer code, comes in with it: sentinel::Status is spelt out.)
using namespace emulated_pmu;

// The marked store of the mailbox protocol (os/slowtier_mailbox.h), the one every request uses.
void marked_store(volatile uint64_t* slot, uint64_t value) { slowtier::marked_store(slot, value); }

EmulatedPmuControl* control_of(unsigned char* first_page) {
  return reinterpret_cast<EmulatedPmuControl*>(first_page + kControlOffset);
}

// A failure whose message is built at run time (a number, strerror's text).
sentinel::Status failure(int err, const std::string& reason) {
  return sentinel::Status::error("", err).append(reason.c_str());
}

constexpr const char* kNoPlugin =
    "no slow-tier plugin answered (not in the two-node guest with SENTINEL_GUEST_SLOW_TIER set)";

// One request on a control page: fills op, stores a fresh number with the marker before it, and
// checks the answer. A store that faults is executed again without its marker, so it tries again.
bool ask(const EmulatedPmuOs& os, unsigned char* first_page, uint32_t op) {
  EmulatedPmuControl* ctl = control_of(first_page);
  ctl->op = op;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t seq = slowtier::fresh_request_seq();
    __atomic_store_n(&ctl->response_seq, 0, __ATOMIC_RELAXED);
    os.marked_store(&ctl->request_seq, seq);
    if (__atomic_load_n(&ctl->response_seq, __ATOMIC_ACQUIRE) == seq) return true;
  }
  return false;
}

}  // namespace

EmulatedPmuOs real_emulated_pmu_os() {
  EmulatedPmuOs os;
  os.marked_store = marked_store;
  return os;
}

const void* real_marked_store_code() { return reinterpret_cast<const void*>(&slowtier::marked_store); }

EmulatedPmu::EmulatedPmu(EmulatedPmuOs os) : os_(std::move(os)) {}
EmulatedPmu::~EmulatedPmu() { stop(); }

sentinel::Status EmulatedPmu::probe() {
  void* p = os::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return failure(errno, std::string("mmap: ") + std::strerror(errno));
  auto* page = static_cast<unsigned char*>(p);
  std::memset(page, 0, kPageBytes);
  std::memcpy(control_of(page)->cookie, kControlCookie, sizeof kControlCookie);
  control_of(page)->abi = kAbi;
  const bool answered = ask(os_, page, kProbe);
  const uint32_t abi = control_of(page)->abi;
  os::munmap(p, kPageBytes);
  if (!answered) return sentinel::Status::error(kNoPlugin, ENODEV);
  if (abi != kAbi) {
    return failure(EPROTO, "the slow-tier plugin speaks emulated-PMU ABI " + std::to_string(abi) + ", not " +
                               std::to_string(kAbi));
  }
  return sentinel::Status::ok();
}

bool EmulatedPmu::request(uint32_t op) {
  if (!ask(os_, map_, op)) return false;
  const EmulatedPmuControl* ctl = control_of(map_);
  counts_.events_in_ranges = ctl->events_in_ranges;
  counts_.samples_queued = ctl->samples_queued;
  counts_.samples_dropped = ctl->samples_dropped;
  counts_.stale_clock = ctl->stale_clock;
  return true;
}

sentinel::Status EmulatedPmu::start(const EmulatedPmuOptions& opt) {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_ != nullptr) return sentinel::Status::error("emulated PMU already started", EBUSY);
  const uint64_t pages = opt.ring_bytes / kPageBytes;
  if (opt.ring_bytes % kPageBytes != 0 || pages == 0 || pages > kMaxDataPages || (pages & (pages - 1)) != 0) {
    return sentinel::Status::error("the ring must be a power of two of 4 KiB pages, at most 256 MiB", EINVAL);
  }
  if (opt.ranges.empty() || opt.ranges.size() > kMaxRanges) {
    return failure(EINVAL, "between 1 and " + std::to_string(kMaxRanges) + " address ranges");
  }
  if (opt.sample_period == 0) return sentinel::Status::error("sample period 0", EINVAL);
  const size_t len = kPageBytes + opt.ring_bytes;
  void* p = os::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return failure(errno, std::string("mmap of the sample ring: ") + std::strerror(errno));
  // Not inherited, so a forked child cannot write into it; small pages, so khugepaged never moves
  // them. The data pages are faulted in one by one as publishing reaches them (populating 64 MiB up
  // front costs seconds of emulated time, and publishing learns every page anew anyway); the first
  // page, whose step-clock word the plugin reads at every sample, is locked where it is.
  os::madvise(p, len, MADV_DONTFORK);
  os::madvise(p, len, MADV_NOHUGEPAGE);
  map_ = static_cast<unsigned char*>(p);
  (void)::mlock(map_, kPageBytes);  // RLIMIT_MEMLOCK may refuse: the plugin checks the page's cookie
  map_len_ = len;
  std::memset(map_, 0, kPageBytes);
  EmulatedPmuControl* ctl = control_of(map_);
  std::memcpy(ctl->cookie, kControlCookie, sizeof kControlCookie);
  ctl->abi = kAbi;
  ctl->data_pages = static_cast<uint32_t>(pages);
  ctl->sample_type = opt.sample_type;
  ctl->sample_period = opt.sample_period;
  ctl->n_ranges = static_cast<uint32_t>(opt.ranges.size());
  for (size_t i = 0; i < opt.ranges.size(); ++i) ctl->ranges[i] = opt.ranges[i];
  sentinel::Status r;
  if (!request(kRegister)) {
    r = sentinel::Status::error(kNoPlugin, ENODEV);
  } else if (ctl->status != kOk) {
    r = failure(EINVAL, "the slow-tier plugin refused the ring (status " + std::to_string(ctl->status) + ")");
  } else if (!reader_.init(reinterpret_cast<perf_event_mmap_page*>(map_), map_ + kPageBytes, opt.ring_bytes,
                           opt.sample_type)) {
    r = sentinel::Status::error("the ring's sample_type cannot be decoded", EINVAL);
  } else {
    token_ = ctl->token;
    ring_bytes_ = opt.ring_bytes;
    sample_type_ = opt.sample_type;
    counts_.publish_retries = 0;
    return sentinel::Status::ok();
  }
  if (ctl->status == kOk && r.sys_errno() == EINVAL) request(kUnregister);
  os::munmap(map_, map_len_);
  map_ = nullptr;
  map_len_ = 0;
  return r;
}

bool EmulatedPmu::publish_pending() {
  EmulatedPmuControl* ctl = control_of(map_);
  ctl->token = token_;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!request(kPrepare) || ctl->status != kOk) return false;
    const uint64_t head = ctl->publish_head, bytes = ctl->publish_bytes;
    if (bytes == 0) return true;
    if (bytes > ring_bytes_ || head % 8 != 0) return false;
    unsigned char* data = map_ + kPageBytes;
    // One mark per page the records will cover, at its first byte the publish writes (before that,
    // in head's page, lie records already read; after it, nothing anyone reads).
    for (uint64_t off = head; off < head + bytes; off = (off / kPageBytes + 1) * kPageBytes) {
      auto* slot = reinterpret_cast<volatile uint64_t*>(data + off % ring_bytes_);
      *slot = 0;  // faults the page in first: a marked store that faults is executed again without its marker
      os_.marked_store(slot, token_);
    }
    if (!request(kPublish)) return false;
    if (ctl->status == kOk) return true;
    if (ctl->status != kMissingPages) return false;
    ++counts_.publish_retries;
  }
  return false;
}

size_t EmulatedPmu::drain(const RingReader::SampleFn& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_ == nullptr) return 0;
  publish_pending();
  return reader_.drain(fn);
}

void EmulatedPmu::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_ == nullptr) return;
  closed_stats_ += reader_.stats();
  control_of(map_)->token = token_;
  request(kUnregister);
  os::munmap(map_, map_len_);
  map_ = nullptr;
  map_len_ = 0;
  token_ = 0;
}

bool EmulatedPmu::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_ != nullptr;
}

uint64_t EmulatedPmu::sample_type() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sample_type_;
}

uint64_t* EmulatedPmu::step_clock() {
  std::lock_guard<std::mutex> lock(mu_);
  return map_ == nullptr ? nullptr : &control_of(map_)->step_clock;
}

RingStats EmulatedPmu::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  RingStats t = closed_stats_;
  if (map_ != nullptr) t += reader_.stats();
  return t;
}

EmulatedPmuCounts EmulatedPmu::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace sentinel
