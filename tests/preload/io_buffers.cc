// A program whose system calls copy into and out of objects while the software sampler profiles them
// (run by io_buffers_test.cc under libsentinel.so). Every step it allocates eight 128 KiB objects, waits
// (bounded) until the profiler has protected a window in each, then moves data through a pipe
// (write/read), a socketpair (send/recv, sendmsg/recvmsg) and a second pipe (writev/readv) and checks
// that every call succeeds and the bytes arrive unchanged. Without the preload's I/O wrappers the kernel
// returns EFAULT for the protected windows.
//
// Prints "io: steps S calls C protected_at_call P failures F" and exits 1 if F > 0.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

constexpr size_t kBytes = 128 * 1024;  // above the default 64 KiB object threshold
enum Buf { kPipeSrc, kPipeDst, kSockSrc, kSockDst, kMsgSrc, kMsgDst, kVecSrc, kVecDst, kBufs };

unsigned char* g_buf[kBufs];
long g_calls = 0, g_protected_at_call = 0, g_failures = 0;

uint64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

// Protected pages of [p, p + n) per /proc/self/maps ("---p" mappings).
long protected_pages(const void* p, size_t n) {
  static char line[4096];
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return 0;
  const auto a = reinterpret_cast<uintptr_t>(p), b = a + n;
  long pages = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t lo, hi;
    char perms[5] = {};
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &lo, &hi, perms) != 3 || std::strcmp(perms, "---p") != 0) continue;
    const uintptr_t x = lo > a ? lo : a, y = hi < b ? hi : b;
    if (x < y) pages += long((y - x) / 4096);
  }
  std::fclose(f);
  return pages;
}

void fill(unsigned char* p, unsigned seed) {
  for (size_t i = 0; i < kBytes; ++i) p[i] = static_cast<unsigned char>(i * 131 + seed);
}

// One I/O call through the wrappers: counts it, and whether its buffer had a protected page just before.
void note_call(const void* buf, size_t n) {
  ++g_calls;
  if (protected_pages(buf, n) > 0) ++g_protected_at_call;
}

void fail(const char* what, long rc) {
  ++g_failures;
  std::fprintf(stderr, "io: %s returned %ld (%s)\n", what, rc, rc < 0 ? std::strerror(errno) : "short");
}

void check_same(const char* what, Buf src, Buf dst) {
  if (std::memcmp(g_buf[src], g_buf[dst], kBytes) != 0) {
    ++g_failures;
    std::fprintf(stderr, "io: %s: data differs\n", what);
  }
}

// Waits (bounded) until every buffer has a protected window, so the calls below meet armed windows.
// Outside the profiled steps nothing is protected: it gives up after max_ms and the calls still run.
void wait_for_windows(int max_ms) {
  const uint64_t end = now_ms() + uint64_t(max_ms);
  for (;;) {
    int armed = 0;
    for (auto* b : g_buf) armed += protected_pages(b, kBytes) > 0;
    if (armed == kBufs || now_ms() >= end) return;
    usleep(200);
  }
}

void one_step(int pipe_fd[2], int vec_fd[2], int sock[2], unsigned seed) {
  for (int i = 0; i < kBufs; ++i) g_buf[i] = static_cast<unsigned char*>(std::malloc(kBytes));
  fill(g_buf[kPipeSrc], seed);
  fill(g_buf[kSockSrc], seed + 1);
  fill(g_buf[kMsgSrc], seed + 2);
  fill(g_buf[kVecSrc], seed + 3);
  wait_for_windows(2000);

  // The whole transfer fits in the pipe and socket buffers (sized in main) and the reads do not wait
  // (a failed send must not leave a receive blocked): a read returns all that was written.
  note_call(g_buf[kPipeSrc], kBytes);
  ssize_t rc = write(pipe_fd[1], g_buf[kPipeSrc], kBytes);
  if (rc != ssize_t(kBytes)) fail("write", rc);
  note_call(g_buf[kPipeDst], kBytes);
  rc = read(pipe_fd[0], g_buf[kPipeDst], kBytes);
  if (rc != ssize_t(kBytes)) fail("read", rc);
  check_same("write/read", kPipeSrc, kPipeDst);

  note_call(g_buf[kSockSrc], kBytes);
  rc = send(sock[0], g_buf[kSockSrc], kBytes, 0);
  if (rc != ssize_t(kBytes)) fail("send", rc);
  note_call(g_buf[kSockDst], kBytes);
  rc = recv(sock[1], g_buf[kSockDst], kBytes, MSG_DONTWAIT);
  if (rc != ssize_t(kBytes)) fail("recv", rc);
  check_same("send/recv", kSockSrc, kSockDst);

  // Two iovecs per message: each half of the object.
  iovec out[2] = {{g_buf[kMsgSrc], kBytes / 2}, {g_buf[kMsgSrc] + kBytes / 2, kBytes / 2}};
  iovec in[2] = {{g_buf[kMsgDst], kBytes / 2}, {g_buf[kMsgDst] + kBytes / 2, kBytes / 2}};
  msghdr msg{};
  msg.msg_iov = out;
  msg.msg_iovlen = 2;
  note_call(g_buf[kMsgSrc], kBytes);
  rc = sendmsg(sock[0], &msg, 0);
  if (rc != ssize_t(kBytes)) fail("sendmsg", rc);
  msg.msg_iov = in;
  note_call(g_buf[kMsgDst], kBytes);
  rc = recvmsg(sock[1], &msg, MSG_DONTWAIT);
  if (rc != ssize_t(kBytes)) fail("recvmsg", rc);
  check_same("sendmsg/recvmsg", kMsgSrc, kMsgDst);

  iovec vout[2] = {{g_buf[kVecSrc], kBytes / 2}, {g_buf[kVecSrc] + kBytes / 2, kBytes / 2}};
  iovec vin[2] = {{g_buf[kVecDst], kBytes / 2}, {g_buf[kVecDst] + kBytes / 2, kBytes / 2}};
  note_call(g_buf[kVecSrc], kBytes);
  rc = writev(vec_fd[1], vout, 2);
  if (rc != ssize_t(kBytes)) fail("writev", rc);
  note_call(g_buf[kVecDst], kBytes);
  rc = readv(vec_fd[0], vin, 2);
  if (rc != ssize_t(kBytes)) fail("readv", rc);
  check_same("writev/readv", kVecSrc, kVecDst);

  for (auto*& b : g_buf) {
    std::free(b);
    b = nullptr;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 6;
  auto step_begin = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "sentinel_step_begin"));
  int pipe_fd[2], vec_fd[2], sock[2];
  if (pipe(pipe_fd) != 0 || pipe(vec_fd) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0) {
    std::perror("io: pipe/socketpair");
    return 2;
  }
  const int big = 1 << 20;
  for (int fd : {pipe_fd[0], vec_fd[0]}) fcntl(fd, F_SETFL, O_NONBLOCK);
  if (fcntl(pipe_fd[1], F_SETPIPE_SZ, big) < big || fcntl(vec_fd[1], F_SETPIPE_SZ, big) < big ||
      setsockopt(sock[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big) != 0 ||
      setsockopt(sock[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big) != 0) {
    std::perror("io: buffer sizes");
    return 2;
  }
  for (int s = 0; s < steps; ++s) {
    if (step_begin != nullptr) step_begin();
    one_step(pipe_fd, vec_fd, sock, unsigned(s) * 7);
  }
  std::printf("io: steps %d calls %ld protected_at_call %ld failures %ld\n", steps, g_calls, g_protected_at_call,
              g_failures);
  return g_failures == 0 ? 0 : 1;
}
