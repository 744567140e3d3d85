// pmu_pattern: a program whose memory traffic is known line by line, for the emulated PMU's guest test
// (tests/guest/pmu_truth.sh). Five buffers of --mib MiB (default 1), allocated from one call site before
// the first step and kept; every step (marked with sentinel_step_begin) makes 8, 4, 2, 1 and 0 passes
// over them, each pass in a phase of its own: before each pass the program allocates a 64 KiB phase
// marker (from another call site) and frees the previous one, so the allocation events are the
// passes. Passes alternate read (sum every word) and write (store every word), a buffer's first pass
// being a read:
//
//   buffer  passes  reads  writes
//   B8      8       4      4        phases 0..7
//   B4      4       2      2        phases 8..11
//   B2      2       1      1        phases 12..13
//   B1      1       1      0        phase 14
//   B0      0       -      -        (never touched after it was filled)
//
// With buffers of at least twice the plugin's cache model (2 MiB by default; the test runs with
// cache_kb=256 and 1 MiB buffers) every pass misses every line, so per step buffer B makes
// reads(B) * L read misses, writes(B) * L write misses and writes(B) * L write-backs, L = size / 64.
//
// --print-truth prints that schedule (for tests/guest/pmu_truth_check.cc) and exits. --pin-cpu N pins
// the calling thread (not Sentinel's service thread, which exists already) to CPU N: the cache model
// is per vCPU, so a pass that moved to another vCPU halfway would find other lines cached there.
// stdout carries one checksum per step, the same with and without Sentinel.
#include <dlfcn.h>
#include <sched.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kBuffers = 5;
constexpr int kPasses[kBuffers] = {8, 4, 2, 1, 0};
const char* const kNames[kBuffers] = {"B8", "B4", "B2", "B1", "B0"};

// One call site for all buffers (the profile tells them apart by occurrence), another for markers.
__attribute__((noinline)) uint64_t* alloc_buffer(size_t bytes) {
  void* p = std::malloc(bytes);
  asm volatile("" : : "r"(p) : "memory");
  return static_cast<uint64_t*>(p);
}
__attribute__((noinline)) void* alloc_marker(size_t bytes) {
  void* p = std::malloc(bytes);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

uint64_t read_pass(const uint64_t* p, size_t words) {
  uint64_t sum = 0;
  for (size_t i = 0; i < words; ++i) sum += p[i];
  return sum;
}

void write_pass(uint64_t* p, size_t words, uint64_t salt) {
  for (size_t i = 0; i < words; ++i) p[i] = salt + i;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 6, mib = 1, pin = -1;
  bool print_truth = false;
  for (int i = 1; i < argc; ++i) {
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!std::strcmp(argv[i], "--print-truth")) print_truth = true;
    else if (!std::strcmp(argv[i], "--steps") && v) steps = std::atoi(v), ++i;
    else if (!std::strcmp(argv[i], "--mib") && v) mib = std::atoi(v), ++i;
    else if (!std::strcmp(argv[i], "--pin-cpu") && v) pin = std::atoi(v), ++i;
    else {
      std::fprintf(stderr, "usage: %s [--print-truth] [--steps N] [--mib M] [--pin-cpu C]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 1 || mib < 1) return 2;
  const size_t bytes = size_t(mib) << 20, words = bytes / sizeof(uint64_t);
  if (print_truth) {
    std::printf("lines %zu\n", bytes / 64);
    int phase = 0;
    for (int b = 0; b < kBuffers; ++b) {
      std::printf("buffer %s occurrence %d passes %d reads %d writes %d phases", kNames[b], b, kPasses[b],
                  (kPasses[b] + 1) / 2, kPasses[b] / 2);
      for (int k = 0; k < kPasses[b]; ++k) std::printf(" %d", phase++);
      std::printf("\n");
    }
    std::printf("period %d\n", phase);
    return 0;
  }
  if (pin >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pin, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("sched_setaffinity");
  }
  auto step_begin = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "sentinel_step_begin"));
  uint64_t* buf[kBuffers];
  for (int b = 0; b < kBuffers; ++b) {
    buf[b] = alloc_buffer(bytes);
    if (buf[b] == nullptr) return 1;
    write_pass(buf[b], words, uint64_t(b) << 32);
  }
  void* marker = nullptr;
  uint64_t total = 0;
  for (int step = 0; step < steps; ++step) {
    if (step_begin != nullptr) step_begin();
    uint64_t check = 0;
    for (int b = 0; b < kBuffers; ++b) {
      for (int k = 0; k < kPasses[b]; ++k) {
        void* next = alloc_marker(64 * 1024);  // the event that begins this pass's phase
        std::free(marker);
        marker = next;
        if (k % 2 == 0) {
          check += read_pass(buf[b], words);
        } else {
          write_pass(buf[b], words, (uint64_t(step) << 40) ^ (uint64_t(b) << 32) ^ uint64_t(k));
        }
      }
    }
    total ^= check + 0x9e3779b97f4a7c15ull * uint64_t(step);
    std::printf("step %d checksum %016" PRIx64 "\n", step, check);
    std::fflush(stdout);
  }
  std::free(marker);
  for (int b = 0; b < kBuffers; ++b) std::free(buf[b]);
  std::printf("final checksum %016" PRIx64 "\n", total);
  return 0;
}
