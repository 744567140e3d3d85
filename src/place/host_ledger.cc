#include "place/host_ledger.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/output_path.h"
#include "core/process_identity.h"
#include "core/text_buf.h"
#include "os/os.h"

namespace sentinel::place {
namespace {

constexpr uint64_t kMagic = 0x3272676465'4c6e73ull;  // "snLedgr2", version 2 of the layout (with `total`)

// The owner word: [63..40] claim generation, [39..32] state, [31..0] pid.
enum State : uint64_t { kClaiming = 1, kLive = 2, kRecovering = 3 };
constexpr uint64_t owner_word(uint64_t generation, State state, pid_t pid) {
  return (generation << 40) | (uint64_t{state} << 32) | static_cast<uint32_t>(pid);
}
constexpr State state_of(uint64_t word) { return static_cast<State>((word >> 32) & 0xff); }
constexpr pid_t pid_of(uint64_t word) { return static_cast<pid_t>(word & 0xffffffffu); }
constexpr uint64_t generation_of(uint64_t word) { return word >> 40; }

void raise(std::atomic<uint64_t>& peak, uint64_t value) {
  uint64_t cur = peak.load(std::memory_order_relaxed);
  while (value > cur && !peak.compare_exchange_weak(cur, value, std::memory_order_relaxed)) {
  }
}

// Maps an open ledger file; nullptr when it has another size or is not a ledger.
HostLedger::Memory* map_ledger(int fd, bool check_magic) {
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != sizeof(HostLedger::Memory)) return nullptr;
  void* p = os::mmap(nullptr, sizeof(HostLedger::Memory), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* mem = static_cast<HostLedger::Memory*>(p);
  if (check_magic && mem->magic.load(std::memory_order_acquire) != kMagic) {
    os::munmap(p, sizeof(HostLedger::Memory));
    return nullptr;
  }
  return mem;
}

// Creates and publishes a fresh ledger at `path`: written under a temporary name, then linked to the
// final name, so no process ever maps a half-initialised ledger. nullptr with *exists when another
// process published one first.
HostLedger::Memory* create_ledger(const char* path, uint64_t budget, pid_t pid, bool* exists, const char** why) {
  char tmp[HostLedger::kPathMax + 32];
  TextBuf t(tmp, sizeof tmp);
  t.put(path).put(".").put(static_cast<uint64_t>(pid)).put(".tmp");
  const int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = "cannot create the ledger file (is /dev/shm there?)";
    return nullptr;
  }
  HostLedger::Memory* mem = nullptr;
  if (ftruncate(fd, sizeof(HostLedger::Memory)) == 0) mem = map_ledger(fd, false);
  close(fd);
  if (mem == nullptr) {
    unlink(tmp);
    *why = "cannot size or map the ledger file";
    return nullptr;
  }
  mem->budget.store(budget, std::memory_order_relaxed);
  mem->magic.store(kMagic, std::memory_order_release);
  const bool linked = link(tmp, path) == 0;
  const int link_errno = errno;
  unlink(tmp);
  if (!linked) {
    os::munmap(mem, sizeof(HostLedger::Memory));
    *exists = link_errno == EEXIST;
    if (!*exists) *why = "cannot publish the ledger file";
    return nullptr;
  }
  return mem;
}

bool owner_alive(const HostLedger::Slot& s, uint64_t word) {
  const pid_t pid = pid_of(word);
  switch (state_of(word)) {
    case kLive: return process_alive(pid, s.start_time.load(std::memory_order_acquire));
    case kClaiming: return !(kill(pid, 0) != 0 && errno == ESRCH);  // start time not written yet
    case kRecovering: return false;  // a recovery is idempotent: whoever sees this may finish it
  }
  return false;
}

}  // namespace

bool HostLedger::path_for(const char* dir, const char* job, const char* host, char* out, size_t cap) noexcept {
  // The layout version is in the name, so a ledger file left by an earlier version (the same job key:
  // MASTER_PORT is often the default 29500) never stands in the way.
  return job_file_path(dir, "ledger2", job, host, out, cap);
}

Status HostLedger::join(const char* path, uint64_t budget_bytes, pid_t pid, uint64_t start_time) noexcept {
  const char* why = nullptr;
  Memory* mem = nullptr;
  for (int round = 0; round < 4 && mem == nullptr; ++round) {
    const int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      mem = map_ledger(fd, true);
      close(fd);
      if (mem == nullptr) return Status::error("the ledger file exists but is not a ledger of this version");
      break;
    }
    if (errno != ENOENT) return Status::error("cannot open the ledger file", errno);
    bool exists = false;
    mem = create_ledger(path, budget_bytes, pid, &exists, &why);
    if (mem == nullptr && !exists) return Status::error(why);
  }
  if (mem == nullptr) return Status::error("the ledger file kept appearing and disappearing");
  mem_ = mem;
  recover_dead();
  Slot* own = claim_slot(pid, start_time, &why);
  if (own == nullptr) {
    os::munmap(mem_, sizeof(Memory));
    mem_ = nullptr;
    return Status::error(why);
  }
  // Read before the slots are checked: whoever changes `total` after this makes the reset's CAS fail.
  uint64_t stranded = mem_->total.load(std::memory_order_seq_cst);
  bool quiet = false;
  if (alone_in_ledger(own, &quiet)) {
    // A stale ledger of an earlier job (or just created): this job's budget holds, and bytes stranded
    // by ranks killed between their two updates are given back (see the header).
    mem_->budget.store(budget_bytes, std::memory_order_seq_cst);
    if (quiet && stranded != 0) mem_->total.compare_exchange_strong(stranded, 0, std::memory_order_seq_cst);
  }
  slot_.store(own, std::memory_order_release);  // only now may this rank's threads reserve
  return Status::ok();
}

HostLedger::Slot* HostLedger::claim_slot(pid_t pid, uint64_t start_time, const char** why) noexcept {
  for (Slot& s : mem_->slots) {
    uint64_t expected = 0;
    const uint64_t generation = (generation_of(s.last_generation.load(std::memory_order_relaxed)) + 1) & 0xffffff;
    const uint64_t claiming = owner_word(generation, kClaiming, pid);
    if (!s.owner.compare_exchange_strong(expected, claiming, std::memory_order_seq_cst)) continue;
    s.last_generation.store(generation << 40, std::memory_order_relaxed);  // the slot's last generation
    // Bytes a thread of the previous owner added after that owner left are dropped, not taken out of
    // `total`: they stay stranded (the safe side) rather than risk taking them out twice.
    s.held.store(0, std::memory_order_seq_cst);
    s.start_time.store(start_time, std::memory_order_release);
    s.owner.store(owner_word(generation, kLive, pid), std::memory_order_release);
    return &s;
  }
  *why = "every slot of the ledger is held by a live rank";
  return nullptr;
}

bool HostLedger::alone_in_ledger(const Slot* own, bool* quiet) const noexcept {
  *quiet = true;
  for (const Slot& s : mem_->slots) {
    if (&s == own) continue;
    if (s.owner.load(std::memory_order_seq_cst) != 0) return false;
    const uint64_t left = s.left_pid.load(std::memory_order_acquire);
    if (left != 0 && process_alive(static_cast<pid_t>(left), s.left_start.load(std::memory_order_acquire)))
      *quiet = false;
  }
  return true;
}

void HostLedger::take_out_of_total(uint64_t bytes) noexcept {
  if (bytes != 0) mem_->total.fetch_sub(bytes, std::memory_order_seq_cst);
}

bool HostLedger::try_reserve(uint64_t bytes) noexcept {
  Slot* s = slot_.load(std::memory_order_acquire);
  if (s == nullptr) return false;
  // `total` first, the slot second: see invariants (B) and (S) in the header.
  const uint64_t sum = mem_->total.fetch_add(bytes, std::memory_order_seq_cst) + bytes;
  if (sum > mem_->budget.load(std::memory_order_relaxed)) {
    take_out_of_total(bytes);
    return false;
  }
  s->held.fetch_add(bytes, std::memory_order_seq_cst);
  raise(mem_->peak_held, sum);
  return true;
}

void HostLedger::force_reserve(uint64_t bytes) noexcept {
  Slot* s = slot_.load(std::memory_order_acquire);
  if (s == nullptr) return;
  const uint64_t sum = mem_->total.fetch_add(bytes, std::memory_order_seq_cst) + bytes;
  s->held.fetch_add(bytes, std::memory_order_seq_cst);
  raise(mem_->peak_held, sum);
}

void HostLedger::release(uint64_t bytes) noexcept {
  Slot* s = slot_.load(std::memory_order_acquire);
  if (s == nullptr) return;
  // The slot first, `total` second, and only what the slot gave up (clamped at 0): invariant (S).
  uint64_t cur = s->held.load(std::memory_order_relaxed);
  while (!s->held.compare_exchange_weak(cur, cur >= bytes ? cur - bytes : 0, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
  }
  take_out_of_total(cur >= bytes ? bytes : cur);
}

uint64_t HostLedger::recover_dead() noexcept {
  if (mem_ == nullptr) return 0;
  uint64_t reclaimed = 0;
  for (Slot& s : mem_->slots) {
    const uint64_t word = s.owner.load(std::memory_order_acquire);
    if (word == 0 || &s == slot_.load(std::memory_order_relaxed) || owner_alive(s, word)) continue;
    // Only the recoverer whose CAS wins touches the slot; a later claimer needs the owner word at 0.
    const uint64_t recovering = owner_word(generation_of(word), kRecovering, pid_of(word));
    uint64_t expected = word;
    if (!s.owner.compare_exchange_strong(expected, recovering, std::memory_order_acq_rel)) continue;
    // The exchange makes this exactly once: a recoverer that finishes an interrupted recovery gets 0.
    const uint64_t held = s.held.exchange(0, std::memory_order_seq_cst);
    take_out_of_total(held);
    reclaimed += held;
    s.start_time.store(0, std::memory_order_relaxed);
    s.left_pid.store(0, std::memory_order_relaxed);  // the owner is dead: no thread of it is left
    expected = recovering;
    if (s.owner.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) {
      mem_->recovered_slots.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return reclaimed;
}

void HostLedger::leave() noexcept {
  Slot* s = slot_.load(std::memory_order_acquire);
  if (s == nullptr) return;
  slot_.store(nullptr, std::memory_order_release);
  // Held bytes first, then the owner word. The mapping stays (threads still running at exit may read
  // it, and one already inside try_reserve may still add to the slot); the kernel removes it with the
  // process. Until this process has exited, no rank resets `total` (see the header).
  s->left_start.store(s->start_time.load(std::memory_order_relaxed), std::memory_order_relaxed);
  s->left_pid.store(pid_of(s->owner.load(std::memory_order_relaxed)), std::memory_order_release);
  take_out_of_total(s->held.exchange(0, std::memory_order_seq_cst));
  s->start_time.store(0, std::memory_order_relaxed);
  s->owner.store(0, std::memory_order_seq_cst);
}

void HostLedger::detach_after_fork() noexcept { slot_.store(nullptr, std::memory_order_relaxed); }

uint64_t HostLedger::budget() const noexcept {
  return mem_ == nullptr ? 0 : mem_->budget.load(std::memory_order_acquire);
}
uint64_t HostLedger::held() const noexcept {
  const Slot* s = slot_.load(std::memory_order_acquire);
  return s == nullptr ? 0 : s->held.load(std::memory_order_acquire);
}
uint64_t HostLedger::host_held() const noexcept {
  return mem_ == nullptr ? 0 : mem_->total.load(std::memory_order_acquire);
}
uint64_t HostLedger::peak_host_held() const noexcept {
  return mem_ == nullptr ? 0 : mem_->peak_held.load(std::memory_order_relaxed);
}
uint32_t HostLedger::live_slots() const noexcept {
  if (mem_ == nullptr) return 0;
  uint32_t n = 0;
  for (const Slot& s : mem_->slots) n += s.owner.load(std::memory_order_acquire) != 0;
  return n;
}
uint32_t HostLedger::slot_index() const noexcept {
  const Slot* s = slot_.load(std::memory_order_acquire);
  return s == nullptr ? kSlots : static_cast<uint32_t>(s - mem_->slots);
}

}  // namespace sentinel::place
