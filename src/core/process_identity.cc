#include "core/process_identity.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "core/env.h"
#include "os/os.h"
#include "core/text_buf.h"

namespace sentinel {
namespace {

int64_t read_int(IdentityLookup lookup, void* ctx, const char* name) {
  const char* v = lookup(name, ctx);
  uint64_t n;
  if (v == nullptr || !parse_uint(v, &n) || n > (1ull << 31)) return -1;
  return static_cast<int64_t>(n);
}

const char* environ_lookup(const char* name, void*) { return env_get(name); }

}  // namespace

ProcessIdentity identity_from(IdentityLookup lookup, void* ctx, int64_t pid, const char* host) noexcept {
  ProcessIdentity id;
  id.pid = pid;
  id.local_rank = read_int(lookup, ctx, "LOCAL_RANK");
  id.rank = read_int(lookup, ctx, "RANK");
  if (id.rank < 0) id.rank = id.local_rank;
  const int64_t world = read_int(lookup, ctx, "WORLD_SIZE");
  id.world_size = world < 0 ? 0 : world;
  TextBuf h(id.host, sizeof id.host);
  h.put(host);
  return id;
}

ProcessIdentity current_identity() noexcept {
  char host[ProcessIdentity::kHostMax] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return identity_from(environ_lookup, nullptr, getpid(), host[0] != '\0' ? host : "localhost");
}

uint64_t process_start_time(pid_t pid) noexcept {
  char path[64];
  TextBuf p(path, sizeof path);
  p.put("/proc/").put(static_cast<uint64_t>(pid)).put("/stat");
  char buf[1024];
  if (os::read_small_file(path, buf, sizeof buf) <= 0) return 0;
  // The command name (field 2) is in parentheses and may contain spaces or ')': fields after it are
  // counted from the last ')'.
  const char* s = nullptr;
  for (const char* c = buf; *c != '\0'; ++c)
    if (*c == ')') s = c;
  if (s == nullptr) return 0;
  // After ") " comes field 3; the start time is field 22.
  int field = 2;
  for (++s; *s != '\0' && field < 22; ++s)
    if (*s == ' ') ++field;
  uint64_t v = 0;
  while (*s >= '0' && *s <= '9') v = v * 10 + static_cast<uint64_t>(*s++ - '0');
  return v;
}

bool process_alive(pid_t pid, uint64_t start_time) noexcept {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  return process_start_time(pid) == start_time;
}

}  // namespace sentinel
