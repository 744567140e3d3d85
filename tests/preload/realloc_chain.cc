// Objects grown and shrunk by realloc (realloc_chain_test.cc runs this under the preload): a buffer grown
// from 64 KiB to 48 MiB in 12.5% steps, every page written as it is added and the whole content checked
// after each call, then shrunk in steps back below the object threshold; a second buffer grown while a
// thread frees and allocates objects of the sizes it passes through (so the extents it moves into are
// recycled ones). Prints "ok" when every byte survived every call.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

constexpr size_t kPage = 4096;

// The byte at offset `off` of a buffer with this seed.
inline unsigned char byte_at(size_t off, unsigned seed) { return static_cast<unsigned char>((off * 131 + seed) >> 3); }

void fill(unsigned char* p, size_t from, size_t to, unsigned seed) {
  for (size_t off = from; off < to; ++off) p[off] = byte_at(off, seed);
}

bool intact(const unsigned char* p, size_t n, unsigned seed) {
  // Every byte of the first and last page, one word of each page in between.
  for (size_t off = 0; off < n && off < kPage; ++off) if (p[off] != byte_at(off, seed)) return false;
  for (size_t off = n > kPage ? n - kPage : 0; off < n; ++off) if (p[off] != byte_at(off, seed)) return false;
  for (size_t off = kPage + 17; off + kPage < n; off += kPage) if (p[off] != byte_at(off, seed)) return false;
  return true;
}

bool chain(size_t from, size_t to, unsigned seed) {
  size_t n = from;
  auto* p = static_cast<unsigned char*>(std::malloc(n));
  if (p == nullptr) return false;
  fill(p, 0, n, seed);
  while (n < to) {
    const size_t before = n;
    n += n / 8;
    p = static_cast<unsigned char*>(std::realloc(p, n));
    if (p == nullptr || !intact(p, before, seed)) return false;
    fill(p, before, n, seed);
  }
  while (n > 1000) {  // shrink: in place while more than half the extent is used, then copied out
    n -= n / 3;
    p = static_cast<unsigned char*>(std::realloc(p, n));
    if (p == nullptr || !intact(p, n, seed)) return false;
  }
  std::free(p);
  return true;
}

}  // namespace

int main() {
  bool ok = chain(64 << 10, 48 << 20, 7);
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    size_t n = 64 << 10;
    while (!stop.load(std::memory_order_relaxed)) {
      void* q = std::malloc(n);
      std::memset(q, 1, kPage);
      std::free(q);
      n = n < (32 << 20) ? n + n / 8 : 64 << 10;
    }
  });
  for (unsigned seed = 1; seed <= 3 && ok; ++seed) ok = chain(64 << 10, 32 << 20, seed);
  stop.store(true);
  churn.join();
  std::printf("%s\n", ok ? "ok" : "CORRUPTED");
  return ok ? 0 : 1;
}
