// A long training-like run for soak tests (tests/preload/soak_test.cc, bench/soak/run.sh): a small
// model's allocation pattern (persistent weights and optimizer state; per step, activations allocated
// layer by layer in the forward pass and freed in reverse in the backward pass, gradients, a temporary
// workspace per layer, and a batch whose size varies from step to step), with every buffer written.
// After each step it samples what must stay flat: resident memory (statm: the kernel's counters; not a
// walk of smaps or smaps_rollup, which is best-effort while another thread changes the mappings, as
// Sentinel's do: the kernel drops mmap_lock when contended and resumes, and in the guest such a walk
// read 21 MiB below statm and varied by MiBs from step to step), the mappings of /proc/self/maps (as
// runs of lines: mbind splits mappings), the object heap's extents (sentinel_get_footprint) and the
// system allocator's bytes in use (mallinfo2: the loop itself makes no small allocations, so growth
// there is Sentinel's own).
//
//   soak_program STEPS [WARMUP_STEPS]
// With SOAK_MOVES=1 (two nodes), each step also moves one of kLayers persistent 64 KiB objects to the
// other node with sentinel_move_object (the previous step's move is waited for first), so that pages go
// to node 1 and back all along the run; it prints "moves requested R done D".
// With SOAK_PROC_DIR set, copies /proc/self/{status,smaps,numa_maps} to DIR/<step>.<file> after the
// first step, at the end of warm-up, half-way and after the last step (to find which mapping grows).
// prints one line per metric: "slope <metric> <per-step slope after warm-up> first=<v> last=<v>",
// the slope fitted by least squares over the steps after warm-up (default: the first quarter).
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sentinel/sentinel.h"

namespace {

constexpr int kLayers = 8;

size_t activation_bytes(int layer) { return (size_t{256} << 10) + (size_t(layer) << 16); }

void* filled(size_t bytes, int value) {
  void* p = std::malloc(bytes);
  if (p == nullptr) std::abort();
  std::memset(p, value, bytes);
  return p;
}

uint64_t resident_bytes() {
  char buf[128];
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  const ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  unsigned long long size = 0, resident = 0;
  std::sscanf(buf, "%llu %llu", &size, &resident);
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// The program's mappings, counted as runs: a /proc/self/maps line that continues the one before it (its
// start is that line's end, with the same permissions and the same backing) is the same mapping split by
// mbind, whose policy differs between the parts. Sentinel's moves change those policies every step, so
// the raw line count goes up and down by a few from step to step (guest.soak_managed: 99-106 lines over a
// run, splits only), which a slope over 100 steps took for growth. A new mapping that the kernel could not
// merge into its neighbour still adds a run.
uint64_t mapping_runs() {
  static char buf[1 << 20];
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t used = 0;
  ssize_t n;
  while (used < sizeof buf - 1 && (n = read(fd, buf + used, sizeof buf - 1 - used)) > 0) used += size_t(n);
  close(fd);
  buf[used] = '\0';
  uint64_t runs = 0;
  unsigned long long prev_end = 0;
  char prev_perms[8] = "", prev_backing[320] = "";
  for (char* line = buf; *line != '\0';) {
    char* next = std::strchr(line, '\n');
    if (next != nullptr) *next = '\0';
    unsigned long long start = 0, end = 0;
    char perms[8] = "", device[32] = "", path[256] = "";
    unsigned long long offset = 0, inode = 0;
    std::sscanf(line, "%llx-%llx %7s %llx %31s %llu %255s", &start, &end, perms, &offset, device, &inode, path);
    char backing[320];
    std::snprintf(backing, sizeof backing, "%s %llu %s", device, inode, path);
    const bool continues = start == prev_end && std::strcmp(perms, prev_perms) == 0 &&
                           std::strcmp(backing, prev_backing) == 0;
    runs += continues ? 0 : 1;
    prev_end = end;
    std::strcpy(prev_perms, perms);
    std::strcpy(prev_backing, backing);
    if (next == nullptr) break;
    line = next + 1;
  }
  return runs;
}

// Copies /proc/self/<name> to <dir>/<step>.<name> (no allocation: the copy must not disturb the run).
void copy_proc_file(const char* dir, long step, const char* name) {
  char src[64], dst[512];
  std::snprintf(src, sizeof src, "/proc/self/%s", name);
  std::snprintf(dst, sizeof dst, "%s/%ld.%s", dir, step, name);
  const int in = open(src, O_RDONLY | O_CLOEXEC);
  const int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  static char buf[1 << 16];
  ssize_t n;
  while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, static_cast<size_t>(n)) != n) break;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
}

struct Sample {
  double rss, maps, extents, malloc_bytes;
};

// Least-squares slope of ys over x = 0, 1, 2, ...
double slope(const std::vector<double>& ys) {
  const double n = static_cast<double>(ys.size());
  if (ys.size() < 2) return 0.0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    const double x = static_cast<double>(i);
    sx += x;
    sy += ys[i];
    sxx += x * x;
    sxy += x * ys[i];
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

}  // namespace

using MoveFn = uint64_t (*)(const void*, int);
using WaitFn = int (*)(uint64_t, int);
using NodeFn = int (*)(const void*);

// One object per layer moved to the other node in turn, one move in flight at a time.
class Mover {
 public:
  bool start() {
    move_ = reinterpret_cast<MoveFn>(dlsym(RTLD_DEFAULT, "sentinel_move_object"));
    wait_ = reinterpret_cast<WaitFn>(dlsym(RTLD_DEFAULT, "sentinel_wait_move"));
    node_ = reinterpret_cast<NodeFn>(dlsym(RTLD_DEFAULT, "sentinel_object_node"));
    if (move_ == nullptr || wait_ == nullptr || node_ == nullptr) return false;
    for (int l = 0; l < kLayers; ++l) objects_[l] = filled(size_t{64} << 10, l);
    return true;
  }
  void step(long step) {
    if (ticket_ != 0) done_ += wait_(ticket_, -1) == 1;
    void* object = objects_[step % kLayers];
    static_cast<unsigned char*>(object)[step % (64 << 10)] ^= 1;  // the program keeps using it
    ticket_ = move_(object, node_(object) == 0 ? 1 : 0);
    requested_ += ticket_ != 0;
  }
  void finish() {
    if (ticket_ != 0) done_ += wait_(ticket_, -1) == 1;
    for (void* o : objects_) std::free(o);
    std::printf("moves requested %ld done %ld\n", requested_, done_);
  }

 private:
  MoveFn move_ = nullptr;
  WaitFn wait_ = nullptr;
  NodeFn node_ = nullptr;
  void* objects_[kLayers] = {};
  uint64_t ticket_ = 0;
  long requested_ = 0, done_ = 0;
};

int main(int argc, char** argv) {
  const long steps = argc > 1 ? std::atol(argv[1]) : 1000;
  const long warmup = argc > 2 ? std::atol(argv[2]) : steps / 4;
  if (steps < 4 || warmup < 0 || warmup >= steps - 2) {
    std::fprintf(stderr, "usage: soak_program STEPS [WARMUP_STEPS < STEPS - 2]\n");
    return 2;
  }
  auto footprint = reinterpret_cast<int (*)(sentinel_footprint*)>(dlsym(RTLD_DEFAULT, "sentinel_get_footprint"));

  // Allocated and touched up front, so that filling it in does not show as the program's growth.
  std::vector<Sample> samples(static_cast<size_t>(steps));
  void* weights[kLayers];
  void* optimizer[kLayers];
  for (int l = 0; l < kLayers; ++l) {
    weights[l] = filled(size_t{1} << 20, l);
    optimizer[l] = filled(size_t{2} << 20, l);
  }
  void* activations[kLayers];
  const char* proc_dir = std::getenv("SOAK_PROC_DIR");
  const char* moves_env = std::getenv("SOAK_MOVES");
  Mover mover;
  const bool moving = moves_env != nullptr && std::strcmp(moves_env, "1") == 0 && mover.start();
  uint64_t checksum = 0;
  for (long step = 0; step < steps; ++step) {
    void* batch = filled((size_t{512} << 10) + static_cast<size_t>(step % 7) * (40 << 10), int(step));
    for (int l = 0; l < kLayers; ++l) {  // forward
      void* workspace = filled(size_t{128} << 10, l);
      activations[l] = filled(activation_bytes(l), int(step) + l);
      std::free(workspace);
    }
    for (int l = kLayers - 1; l >= 0; --l) {  // backward
      void* gradient = filled(activation_bytes(l), l);
      checksum += static_cast<unsigned char*>(activations[l])[activation_bytes(l) - 1];
      static_cast<unsigned char*>(weights[l])[step % (1 << 20)] ^= 1;  // optimizer update
      std::free(gradient);
      std::free(activations[l]);
    }
    std::free(batch);
    if (moving) mover.step(step);
    sentinel_footprint f{};
    if (footprint != nullptr) footprint(&f);
    const struct mallinfo2 m = mallinfo2();
    samples[static_cast<size_t>(step)] =
        Sample{static_cast<double>(resident_bytes()), static_cast<double>(mapping_runs()),
               static_cast<double>(f.extents), static_cast<double>(m.uordblks + m.hblkhd)};
    if (proc_dir != nullptr && (step == 0 || step == warmup || step == (warmup + steps) / 2 || step == steps - 1))
      for (const char* name : {"status", "smaps", "numa_maps"}) copy_proc_file(proc_dir, step, name);
  }
  for (int l = 0; l < kLayers; ++l) {
    std::free(weights[l]);
    std::free(optimizer[l]);
  }
  if (moving) mover.finish();

  struct Metric {
    const char* name;
    double Sample::*field;
  };
  const Metric metrics[] = {{"resident_bytes", &Sample::rss},
                            {"mapping_runs", &Sample::maps},
                            {"heap_extents", &Sample::extents},
                            {"malloc_bytes", &Sample::malloc_bytes}};
  for (const Metric& m : metrics) {
    std::vector<double> ys;
    for (size_t i = static_cast<size_t>(warmup); i < samples.size(); ++i) ys.push_back(samples[i].*m.field);
    std::printf("slope %s %.6f first=%.0f last=%.0f\n", m.name, slope(ys), ys.front(), ys.back());
  }
  std::printf("steps %ld warmup %ld sentinel %d checksum %llu\n", steps, warmup, footprint != nullptr,
              static_cast<unsigned long long>(checksum));
  return 0;
}
