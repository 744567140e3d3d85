#include "core/live_status.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace sentinel {

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the record is shared between processes: its atomics must not need a lock");

bool LiveStatusWriter::open(const char* path) noexcept {
  close();
  // The file exists already (`sentinel run` made it with mkstemp): never follow a symlink planted at its
  // name, and never resize or write into anything but a regular file of this user (docs/reliability.md).
  const int fd = ::open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
            (static_cast<size_t>(st.st_size) >= sizeof(LiveStatusFile) || ::ftruncate(fd, sizeof(LiveStatusFile)) == 0);
  void* p = ok ? ::mmap(nullptr, sizeof(LiveStatusFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (p == MAP_FAILED) return false;
  auto* f = static_cast<LiveStatusFile*>(p);
  int32_t unowned = 0;
  if (!f->owner_pid.compare_exchange_strong(unowned, static_cast<int32_t>(::getpid()))) {
    ::munmap(p, sizeof(LiveStatusFile));
    return false;
  }
  f->version = LiveStatusFile::kVersion;
  f->magic = LiveStatusFile::kMagic;
  file_ = f;
  return true;
}

void LiveStatusWriter::publish(const LiveStatus& status) noexcept {
  if (file_ == nullptr) return;
  const uint64_t s = file_->seq.load(std::memory_order_relaxed);
  file_->seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(&file_->status, &status, sizeof status);
  file_->seq.store(s + 2, std::memory_order_release);
}

void LiveStatusWriter::close() noexcept {
  if (file_ != nullptr) ::munmap(file_, sizeof(LiveStatusFile));
  file_ = nullptr;
}

bool read_live_status(const char* path, LiveStatus* out) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(LiveStatusFile))
    p = ::mmap(nullptr, sizeof(LiveStatusFile), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  const auto* f = static_cast<const LiveStatusFile*>(p);
  bool ok = false;
  if (f->magic == LiveStatusFile::kMagic && f->version == LiveStatusFile::kVersion) {
    for (int attempt = 0; attempt < 100 && !ok; ++attempt) {
      const uint64_t before = f->seq.load(std::memory_order_acquire);
      if (before == 0 || (before & 1) != 0) {  // never written, or being written
        if (before == 0) break;
        continue;
      }
      std::memcpy(out, &f->status, sizeof *out);
      std::atomic_thread_fence(std::memory_order_acquire);
      ok = f->seq.load(std::memory_order_relaxed) == before;
    }
  }
  ::munmap(p, sizeof(LiveStatusFile));
  if (ok) {
    out->mode[sizeof out->mode - 1] = '\0';
    out->stage[sizeof out->stage - 1] = '\0';
  }
  return ok;
}

}  // namespace sentinel
