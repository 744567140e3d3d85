// Test helpers of the software sampler's tests: anonymous mappings to sample, a region over one, passes
// that touch every cache line, and whether the kernel can read a range (a protected page makes pwrite(2)
// fail with EFAULT instead of faulting, so this sees protection without the handler).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "sampler/software_sampler.h"

namespace sentinel::sampler_test {

inline const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

struct Mapping {
  explicit Mapping(size_t pages) : len(pages * kPage) {
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~Mapping() {
    if (base != nullptr) munmap(base, len);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* base;
  size_t len;
};

inline SampleRegion region_of(const Mapping& m, uint32_t slot) {
  return SampleRegion{reinterpret_cast<uintptr_t>(m.base), m.len, slot};
}

inline void write_all(char* p, size_t len, char v) {
  for (size_t i = 0; i < len; i += 64) *reinterpret_cast<volatile char*>(p + i) = v;
}
inline uint64_t read_all(const char* p, size_t len) {
  uint64_t s = 0;
  for (size_t i = 0; i < len; i += 64) s += *reinterpret_cast<const volatile char*>(p + i);
  return s;
}

inline bool kernel_can_read(int fd, const char* p, size_t len) {
  return pwrite(fd, p, len, 0) == static_cast<ssize_t>(len);
}

}  // namespace sentinel::sampler_test
