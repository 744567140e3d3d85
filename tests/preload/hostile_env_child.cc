// The program hostile_env_test runs under the preload with hostile SENTINEL_* values: allocates and
// frees blocks of many sizes, fills and checks them, and prints "active=<0|1> checksum=<hex>".
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main() {
  uint64_t checksum = 0;
  void* blocks[64] = {};
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 64; ++i) {
      const size_t size = (size_t{1} << (i % 20)) + static_cast<size_t>(round);
      auto* p = static_cast<unsigned char*>(std::malloc(size));
      if (p == nullptr) return 2;
      std::memset(p, (round + i) & 0xff, size);
      std::free(blocks[i]);
      blocks[i] = p;
    }
    for (int i = 0; i < 64; ++i) {
      const size_t size = (size_t{1} << (i % 20)) + static_cast<size_t>(round);
      const auto* p = static_cast<const unsigned char*>(blocks[i]);
      for (size_t k = 0; k < size; k += 4093) checksum = checksum * 31 + p[k];
      checksum = checksum * 31 + p[size - 1];
    }
  }
  for (void* p : blocks) std::free(p);
  auto active = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "sentinel_active"));
  std::printf("active=%d checksum=%llx\n", active != nullptr ? active() : -1,
              static_cast<unsigned long long>(checksum));
  return 0;
}
