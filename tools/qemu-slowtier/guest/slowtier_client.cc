// libsentinel_slowtier.so: the C API over the guest side of the mailbox protocol
// (src/os/slowtier_mailbox.h, linked in statically). No dependencies beyond libc so that any program
// (or Python through ctypes) can load it.
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "os/slowtier_mailbox.h"
#include "sentinel/slowtier.h"

namespace {

using sentinel::slowtier::kMailboxPageBytes;

pthread_mutex_t g_default_lock = PTHREAD_MUTEX_INITIALIZER;
void* g_default_page = nullptr;

}  // namespace

extern "C" __attribute__((visibility("default"))) int sentinel_slowtier_read_with_page(
    void* page, struct sentinel_slowtier_counters* out) {
  if (page == nullptr || out == nullptr || reinterpret_cast<uintptr_t>(page) % kMailboxPageBytes != 0) {
    errno = EINVAL;
    return -1;
  }
  if (sentinel::slowtier::read_with_page(page, out)) return 0;
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
