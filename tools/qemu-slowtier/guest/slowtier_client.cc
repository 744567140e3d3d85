// libsentinel_slowtier.so: the guest side of the mailbox protocol (../mailbox.h). No dependencies
// beyond libc so that any program (or Python through ctypes) can load it.
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "../mailbox.h"
#include "sentinel/slowtier.h"

namespace {

using sentinel::slowtier::kMailboxCookie;
using sentinel::slowtier::kMailboxPageBytes;
using sentinel::slowtier::Mailbox;

pthread_mutex_t g_default_lock = PTHREAD_MUTEX_INITIALIZER;
void* g_default_page = nullptr;
std::atomic<uint64_t> g_seq{0};

// A request number no earlier request of any process used: a stale answer never matches.
uint64_t fresh_seq() {
  return (static_cast<uint64_t>(getpid()) << 40) ^ (g_seq.fetch_add(1, std::memory_order_relaxed) + 1);
}

// The marker and the store must be adjacent instructions in one translation block: one asm
// statement keeps them adjacent, and a function of its own aligned to 64 bytes keeps them at the
// start of a block (a call ends the caller's block) and off any page boundary, where TCG would
// end the block between them.
__attribute__((noinline, aligned(64))) void marked_store(volatile uint64_t* slot, uint64_t value) {
  asm volatile(
      ".byte 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x53, 0x4e, 0x54, 0x4c\n\t"
      "movq %1, (%0)"
      :
      : "r"(slot), "r"(value)
      : "memory");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sentinel_slowtier_read_with_page(
    void* page, struct sentinel_slowtier_counters* out) {
  if (page == nullptr || out == nullptr || reinterpret_cast<uintptr_t>(page) % kMailboxPageBytes != 0) {
    errno = EINVAL;
    return -1;
  }
  auto* box = static_cast<Mailbox*>(page);
  std::memcpy(box->cookie, kMailboxCookie, sizeof kMailboxCookie);
  // A store that faults (page not yet mapped) is re-executed without its marker: retry.
  for (int attempt = 0; attempt < 4; ++attempt) {
    uint64_t seq = fresh_seq();
    __atomic_store_n(&box->response_seq, 0, __ATOMIC_RELAXED);
    marked_store(&box->request_seq, seq);
    if (__atomic_load_n(&box->response_seq, __ATOMIC_ACQUIRE) == seq) {
      std::memcpy(out, &box->counters, sizeof *out);
      return 0;
    }
  }
  errno = ENODEV;
  return -1;
}

extern "C" __attribute__((visibility("default"))) int sentinel_slowtier_read(
    struct sentinel_slowtier_counters* out) {
  pthread_mutex_lock(&g_default_lock);
  if (g_default_page == nullptr) {
    void* p = mmap(nullptr, kMailboxPageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p != MAP_FAILED) {
      std::memset(p, 0, kMailboxPageBytes);
      g_default_page = p;
    }
  }
  int rc = -1;
  if (g_default_page != nullptr) {
    rc = sentinel_slowtier_read_with_page(g_default_page, out);
  } else {
    errno = ENOMEM;
  }
  int saved = errno;
  pthread_mutex_unlock(&g_default_lock);
  errno = saved;
  return rc;
}
