#include "core/output_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>

#include "core/text_buf.h"

namespace sentinel {
namespace {

uint64_t hash_text(const char* s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (; *s != '\0'; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h;
}

// Reads "<pid> <start>" from a claim file; false when it is empty or malformed (being written).
bool read_holder(int fd, int64_t* pid, uint64_t* start) {
  char buf[64];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* s = buf;
  uint64_t p = 0, t = 0;
  if (*s < '0' || *s > '9') return false;
  while (*s >= '0' && *s <= '9') p = p * 10 + static_cast<uint64_t>(*s++ - '0');
  if (*s++ != ' ') return false;
  while (*s >= '0' && *s <= '9') t = t * 10 + static_cast<uint64_t>(*s++ - '0');
  if (*s != '\n') return false;
  *pid = static_cast<int64_t>(p);
  *start = t;
  return true;
}

}  // namespace

bool pattern_has(const char* pattern, char conversion) noexcept {
  for (const char* s = pattern; *s != '\0'; ++s) {
    if (*s != '%') continue;
    if (s[1] == conversion) return true;
    if (s[1] == '\0') return false;
    ++s;  // skip the conversion character (also the second '%' of "%%")
  }
  return false;
}

bool expand_output_path(const char* pattern, const ProcessIdentity& id, char* out, size_t cap,
                        const char** why) noexcept {
  char copy[1024];
  // out may alias pattern (resolve in place): expand from a copy.
  TextBuf c(copy, sizeof copy);
  c.put(pattern);
  if (c.truncated()) {
    *why = "the pattern is too long";
    return false;
  }
  TextBuf a(out, cap);
  for (const char* s = copy; *s != '\0'; ++s) {
    if (*s != '%') {
      a.put_char(*s);
      continue;
    }
    switch (*++s) {
      case 'p': a.put(static_cast<uint64_t>(id.pid)); break;
      case 'r': a.put(static_cast<uint64_t>(id.rank < 0 ? 0 : id.rank)); break;
      case 'h': a.put(id.host); break;
      case '%': a.put_char('%'); break;
      default:
        *why = "a '%' must be followed by p (pid), r (rank), h (host name) or % (a percent sign)";
        return false;
    }
  }
  if (a.truncated() || a.size() == 0) {
    *why = a.truncated() ? "the expanded path is longer than 511 bytes" : "the expanded path is empty";
    return false;
  }
  return true;
}

bool job_file_path(const char* dir, const char* kind, const char* job, const char* host, char* out,
                   size_t cap) noexcept {
  TextBuf p(out, cap);
  p.put(dir);
  p.put("/sentinel-");
  p.put(kind);
  p.put_char('-');
  uint64_t h = 14695981039346656037ull;
  for (const char* part : {job, "\n", host})
    for (const char* s = part; *s != '\0'; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) p.put_char(kHex[(h >> shift) & 15]);
  return !p.truncated();
}

bool OutputClaims::claim_name(const char* path, char* name, size_t cap) const noexcept {
  // The claim is for the absolute path, so two processes in different directories writing "stats.json"
  // do not collide, and two naming one file differently (relative, absolute) do.
  char absolute[1024];
  absolute[0] = '\0';
  if (path[0] != '/' && getcwd(absolute, sizeof absolute) == nullptr) return false;
  TextBuf abs = TextBuf::continuing(absolute, sizeof absolute);
  if (path[0] != '/') abs.put_char('/');
  abs.put(path);
  if (abs.truncated()) return false;
  TextBuf n(name, cap);
  n.put(dir_);
  n.put("/sentinel-out-");
  static constexpr char kHex[] = "0123456789abcdef";
  const uint64_t h = hash_text(absolute);
  for (int shift = 60; shift >= 0; shift -= 4) n.put_char(kHex[(h >> shift) & 15]);
  return !n.truncated();
}

bool OutputClaims::claim(const char* path, int64_t pid, uint64_t start_time, const char** why) noexcept {
  char name[kNameMax];
  if (!claim_name(path, name, sizeof name)) {
    *why = "the claim file name does not fit";
    return false;
  }
  char record[64];
  TextBuf r(record, sizeof record);
  r.put(static_cast<uint64_t>(pid));
  r.put_char(' ');
  r.put(start_time);
  r.put_char('\n');
  // A few rounds: each failed round means another process created or removed the claim in between.
  for (int round = 0; round < 8; ++round) {
    const int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
      const bool written = write(fd, record, r.size()) == static_cast<ssize_t>(r.size());
      close(fd);
      if (!written) {
        unlink(name);
        *why = "cannot write the claim file";
        return false;
      }
      if (count_ < kMaxClaims) {
        TextBuf(names_[count_], kNameMax).put(name);
        owners_[count_++] = pid;
      }
      return true;
    }
    if (errno != EEXIST) {
      *why = "cannot create the claim file (is the claim directory there?)";
      return false;
    }
    const int existing = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (existing < 0) continue;  // removed in between: try again
    int64_t holder = 0;
    uint64_t holder_start = 0;
    const bool complete = read_holder(existing, &holder, &holder_start);
    close(existing);
    if (!complete) return false;  // being written by a process that has just created it
    if (holder == pid && holder_start == start_time) return true;
    if (process_alive(static_cast<pid_t>(holder), holder_start)) return false;
    // A dead holder's claim: remove it and compete for it again. Two takers may both unlink; only one
    // wins the O_EXCL create that follows.
    unlink(name);
  }
  *why = "the claim kept changing hands";
  return false;
}

void OutputClaims::release_all(int64_t pid) noexcept {
  for (size_t i = 0; i < count_; ++i) {
    if (owners_[i] != pid) continue;
    const int fd = open(names_[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    int64_t holder = 0;
    uint64_t start = 0;
    const bool mine = read_holder(fd, &holder, &start) && holder == pid;
    close(fd);
    if (mine) unlink(names_[i]);
  }
}

bool resolve_output_path(const char* variable, char* buf, size_t cap, const ProcessIdentity& id,
                         uint64_t start_time, OutputClaims* claims, char* note, size_t note_cap,
                         const char** why) noexcept {
  const bool per_process = pattern_has(buf, 'p');
  const bool per_rank = pattern_has(buf, 'r');
  if (!expand_output_path(buf, id, buf, cap, why)) return false;
  if (per_process) return true;
  TextBuf path = TextBuf::continuing(buf, cap);
  TextBuf line = TextBuf::continuing(note, note_cap);
  if (id.world_size > 1 && id.rank >= 0 && !per_rank) {
    path.put(".r");
    path.put(static_cast<uint64_t>(id.rank));
    if (path.truncated()) {
      *why = "the path with its rank suffix is longer than 511 bytes";
      return false;
    }
    line.put(variable);
    line.put(": one of WORLD_SIZE=");
    line.put(static_cast<uint64_t>(id.world_size));
    line.put(" ranks, writing ");
    line.put(buf);
    line.put(" (use %r or %p to choose the name)\n");
  }
  if (claims == nullptr) return true;
  const char* claim_why = nullptr;
  if (claims->claim(buf, id.pid, start_time, &claim_why)) return true;
  if (claim_why != nullptr) return true;  // claims unavailable here: keep the path, nothing is known
  const size_t before = path.size();
  path.put_char('.');
  path.put(static_cast<uint64_t>(id.pid));
  if (path.truncated()) {
    *why = "the path with its pid suffix is longer than 511 bytes";
    return false;
  }
  line.put(variable);
  line.put(": ");
  for (size_t i = 0; i < before; ++i) line.put_char(buf[i]);
  line.put(" is claimed by another live process, writing ");
  line.put(buf);
  line.put(" (use %p or %r to choose the name)\n");
  return true;
}

}  // namespace sentinel
