#include "sampler/pmu_sampler.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "os/directory.h"
#include "os/os.h"

namespace sentinel {
namespace {

std::string errno_name(int err) {
  const char* n = strerrorname_np(err);
  return n != nullptr ? n : "errno " + std::to_string(err);
}

int read_paranoid() {
  char buf[32];
  if (os::read_small_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof buf) <= 0) return -100;
  int v = -100;
  if (std::sscanf(buf, "%d", &v) != 1) v = -100;
  return v;
}

// A failure whose message is built at run time (the errno's name, a path, a number).
Status failure(int err, const std::string& reason) { return Status::error("", err).append(reason.c_str()); }

}  // namespace

const char* sampler_kind_name(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kPebs: return "pebs";
    case SamplerKind::kIbs: return "ibs";
    case SamplerKind::kSoftware: return "software";
    case SamplerKind::kNone: break;
  }
  return "none";
}

const char* pmu_source_name(PmuSource source) {
  return source == PmuSource::kEmulated ? "qemu-slowtier" : "perf_event";
}

std::string explain_perf_errno(int err) {
  std::string why;
  switch (err) {
    case ENOENT: why = "the CPU or hypervisor does not expose this event; no PMU in a VM?"; break;
    case ENODEV: why = "no such PMU on this machine"; break;
    case EOPNOTSUPP: why = "the PMU cannot sample this event (or precise_ip) here"; break;
    case EACCES:
    case EPERM:
      why = "not permitted: perf_event_paranoid is " + std::to_string(read_paranoid()) +
            "; needs CAP_PERFMON or a lower value";
      break;
    case EINVAL: why = "the kernel rejected the event attributes"; break;
    case EMFILE: why = "too many open files"; break;
    default: why = std::strerror(err); break;
  }
  return errno_name(err) + " (" + why + ")";
}

Status build_pmu_attr(const PmuSamplerOptions& opt, perf_event_attr* attr, std::string* encoded) {
  std::string unused;
  if (encoded == nullptr) encoded = &unused;
  std::memset(attr, 0, sizeof *attr);
  attr->size = sizeof *attr;
  attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
  attr->disabled = 0;
  attr->exclude_kernel = 1;  // user data addresses only; also what perf_event_paranoid=2 allows
  attr->exclude_hv = 1;
  // Sample times on the runtime's clock (now_ns()), so a sample can be put in the phase it happened in.
  attr->use_clockid = 1;
  attr->clockid = CLOCK_MONOTONIC;
  if (opt.has_encoding) {
    attr->type = opt.encoding.type;
    attr->config = opt.encoding.config;
    attr->config1 = opt.encoding.config1;
    attr->config2 = opt.encoding.config2;
    attr->sample_period = opt.sample_period;
    attr->precise_ip = opt.precise_ip & 3;
    *encoded = "explicit encoding";
    return Status::ok();
  }
  if (opt.kind == SamplerKind::kPebs) {
    const std::string name = opt.event.empty() ? default_pebs_event(opt.load_latency, opt.ldlat) : opt.event;
    PmuEventEncoding e;
    std::string error;
    if (!encode_pmu_event(name, &e, &error)) return failure(ENOENT, "libpfm4: " + error);
    attr->type = e.type;
    attr->config = e.config;
    attr->config1 = e.config1;
    attr->config2 = e.config2;
    attr->sample_period = opt.sample_period;
    attr->precise_ip = opt.precise_ip & 3;
    if (opt.weight_and_data_src) attr->sample_type |= PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC;
    *encoded = e.fstr;
    return Status::ok();
  }
  if (opt.kind == SamplerKind::kIbs) {
    uint32_t type = 0;
    int err = 0;
    std::string reason;
    if (!read_ibs_op_type(opt.sysfs_pmu_root, &type, &err, &reason)) return failure(err, reason);
    attr->type = type;
    attr->sample_period = ibs_op_period(opt.sample_period);
    attr->sample_type |= PERF_SAMPLE_RAW;  // the address on kernels before 6.2 (see ibs.h)
    // IBS cannot filter by privilege level; the kernel rejects exclude_* bits for it.
    attr->exclude_kernel = 0;
    attr->exclude_hv = 0;
    *encoded = "ibs_op type " + std::to_string(type);
    return Status::ok();
  }
  return failure(EINVAL, std::string("not a PMU sampler kind: ") + sampler_kind_name(opt.kind));
}

struct PmuSampler::Ring {
  pid_t tid = 0;
  int fd = -1;
  void* map = nullptr;
  size_t map_len = 0;
  RingReader reader;
};

PmuSampler::PmuSampler(EmulatedPmuOs emulated_os) : emulated_os_(std::move(emulated_os)) {
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
}
PmuSampler::~PmuSampler() { stop(); }

Status PmuSampler::probe(const PmuSamplerOptions& opt) {
  if (opt.source == PmuSource::kEmulated) {
    if (opt.kind != SamplerKind::kPebs) return Status::error("the slow-tier plugin emulates PEBS only", EINVAL);
    EmulatedPmu emulated(emulated_os_);
    return emulated.probe();
  }
  perf_event_attr attr;
  const Status r = build_pmu_attr(opt, &attr);
  if (!r.is_ok()) return r;
  const int fd = os::perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return failure(e, "perf_event_open: " + explain_perf_errno(e));
  }
  close(fd);
  return r;
}

Status PmuSampler::open_ring(pid_t tid, std::unique_ptr<Ring>* out) {
  auto ring = std::make_unique<Ring>();
  ring->tid = tid;
  ring->fd = os::perf_event_open(&attr_, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (ring->fd < 0) {
    const int e = errno;
    return failure(e, "perf_event_open(tid " + std::to_string(tid) + "): " + explain_perf_errno(e));
  }
  ring->map_len = (1 + size_t{opt_.ring_pages}) * page_;
  ring->map = os::mmap(nullptr, ring->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring->fd, 0);
  if (ring->map == MAP_FAILED) {
    const int e = errno;
    close(ring->fd);
    return failure(e, "mmap of the perf ring: " + errno_name(e) + " (" + std::strerror(e) + ")");
  }
  auto* meta = static_cast<perf_event_mmap_page*>(ring->map);
  // data_offset/data_size exist since Linux 4.1; older kernels put the data right after the page.
  const size_t off = meta->data_offset != 0 ? meta->data_offset : page_;
  const size_t size = meta->data_size != 0 ? meta->data_size : size_t{opt_.ring_pages} * page_;
  if (off + size > ring->map_len ||
      !ring->reader.init(meta, static_cast<uint8_t*>(ring->map) + off, size, attr_.sample_type)) {
    os::munmap(ring->map, ring->map_len);
    close(ring->fd);
    return Status::error("unexpected perf ring layout", EINVAL);
  }
  *out = std::move(ring);
  return Status::ok();
}

void PmuSampler::close_ring(Ring& r) {
  closed_stats_ += r.reader.stats();
  if (r.map != nullptr) os::munmap(r.map, r.map_len);
  if (r.fd >= 0) close(r.fd);
  r.map = nullptr;
  r.fd = -1;
}

Status PmuSampler::start(const PmuSamplerOptions& opt) {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return Status::error("pmu sampler already started", EBUSY);
  if (opt.ring_pages == 0 || (opt.ring_pages & (opt.ring_pages - 1)) != 0) {
    return Status::error("ring_pages must be a power of two", EINVAL);
  }
  opt_ = opt;
  if (opt.source == PmuSource::kEmulated) {
    EmulatedPmuOptions e;
    e.sample_period = opt.sample_period;
    e.ring_bytes = opt.emulated_ring_bytes;
    e.ranges = opt.emulated_ranges;
    auto emulated = std::make_unique<EmulatedPmu>(emulated_os_);
    const Status r = emulated->start(e);
    if (!r.is_ok()) return r;
    emulated_ = std::move(emulated);
    started_ = true;
    description_ = "qemu-slowtier ring of " + std::to_string(e.ring_bytes >> 10) + " KiB, period " +
                   std::to_string(e.sample_period);
    return r;
  }
  std::string encoded;
  const Status r = build_pmu_attr(opt, &attr_, &encoded);
  if (!r.is_ok()) return r;
  std::vector<pid_t> tids;
  if (os::for_each_thread([&](pid_t tid) { tids.push_back(tid); }) != 0 && tids.empty()) {
    return failure(errno, std::string("/proc/self/task: ") + std::strerror(errno));
  }
  for (pid_t tid : tids) {
    std::unique_ptr<Ring> ring;
    const Status o = open_ring(tid, &ring);
    if (!o.is_ok() && o.sys_errno() == ESRCH) continue;  // the thread exited meanwhile
    if (!o.is_ok()) {
      for (auto& x : rings_) close_ring(*x);
      rings_.clear();
      return o;
    }
    rings_.push_back(std::move(ring));
  }
  started_ = true;
  description_ = std::move(encoded);
  return r;
}

Status PmuSampler::attach_thread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) return Status::error("pmu sampler not started", EINVAL);
  if (emulated_) return Status::ok();  // one ring for the process
  std::unique_ptr<Ring> ring;
  const Status r = open_ring(tid, &ring);
  if (!r.is_ok()) return r;
  for (auto& x : rings_) {
    if (x->tid == tid) {  // a ring left by an exited thread whose tid was reused
      x->reader.drain(nullptr);
      close_ring(*x);
      x = std::move(ring);
      return r;
    }
  }
  rings_.push_back(std::move(ring));
  return r;
}

size_t PmuSampler::drain(const AccessFn& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t delivered = 0;
  if (emulated_) {
    emulated_->drain([&](const PerfSample& s) {
      if (s.addr == 0) return;
      PmuAccess a;
      a.addr = s.addr;
      a.cpu = s.cpu;
      a.kind = access_kind_from_data_src(s.data_src);
      a.step_clock = s.stream_id;
      ++delivered;
      if (fn) fn(a);
    });
    return delivered;
  }
  const bool raw_addr = (attr_.sample_type & PERF_SAMPLE_RAW) != 0;
  const bool monotonic = attr_.use_clockid != 0 && attr_.clockid == CLOCK_MONOTONIC;
  auto on_sample = [&](const PerfSample& s) {
    PmuAccess a;
    a.addr = s.addr;
    a.tid = s.tid;
    a.kind = (attr_.sample_type & PERF_SAMPLE_DATA_SRC) ? access_kind_from_data_src(s.data_src) : -1;
    a.monotonic_ns = monotonic ? s.time : 0;
    if (raw_addr) {
      uint64_t addr = 0;
      int k = -1;
      if (ibs_raw_access(s.raw, s.raw_size, &addr, &k)) {
        if (a.addr == 0) a.addr = addr;
        a.kind = k;
      }
    }
    if (a.addr == 0) return;
    ++delivered;
    if (fn) fn(a);
  };
  for (size_t i = 0; i < rings_.size();) {
    rings_[i]->reader.drain(on_sample);
    // A thread that has exited writes nothing more: its last samples were just read.
    if (syscall(SYS_tgkill, getpid(), rings_[i]->tid, 0) != 0 && errno == ESRCH) {
      close_ring(*rings_[i]);
      rings_.erase(rings_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
  return delivered;
}

void PmuSampler::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (emulated_) {
    emulated_->stop();
    closed_stats_ += emulated_->stats();
    last_emulated_counts_ = emulated_->counts();
    emulated_.reset();
  }
  for (auto& r : rings_) close_ring(*r);
  rings_.clear();
  started_ = false;
}

size_t PmuSampler::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return emulated_ ? 1 : rings_.size();
}

std::string PmuSampler::description() const {
  std::lock_guard<std::mutex> lock(mu_);
  return description_;
}

RingStats PmuSampler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  RingStats t = closed_stats_;
  for (const auto& r : rings_) t += r->reader.stats();
  if (emulated_) t += emulated_->stats();
  return t;
}

uint64_t* PmuSampler::step_clock() {
  std::lock_guard<std::mutex> lock(mu_);
  return emulated_ ? emulated_->step_clock() : nullptr;
}

EmulatedPmuCounts PmuSampler::emulated_counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return emulated_ ? emulated_->counts() : last_emulated_counts_;
}

}  // namespace sentinel
