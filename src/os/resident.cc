#include "os/resident.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include "os/os.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 uapi; older C libraries do not name it
#endif

namespace sentinel::os {

bool make_resident(const void* addr, size_t bytes) noexcept {
  if (bytes == 0) return true;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(addr) + bytes + page - 1) & ~(page - 1);
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
}

}  // namespace sentinel::os
