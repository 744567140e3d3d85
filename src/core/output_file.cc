#include "core/output_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace sentinel {
namespace {

Status fail(const std::string& what, int err) {
  return Status::error("", err).append(what.c_str()).append(": ").append(std::strerror(err));
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// "<dir>/.<base>.<16 hex digits>.tmp": hidden, in the target's directory (rename stays within one
// file system), unpredictable so that nothing can be planted at it beforehand.
std::string temp_name_for(const std::string& path) {
  uint64_t random = 0;
  if (getrandom(&random, sizeof random, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof random)) {
    // No entropy yet (early boot): O_EXCL still refuses anything planted; mix in what varies.
    random = (static_cast<uint64_t>(getpid()) << 32) ^ reinterpret_cast<uintptr_t>(&random);
  }
  const std::string dir = directory_of(path);
  const std::string base = path.substr(dir.size());
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%016llx.tmp", static_cast<unsigned long long>(random));
  return dir + "." + base + suffix;
}

// "/proc/self/fd/<fd>": the name through which an unnamed file is linked (linkat, AT_SYMLINK_FOLLOW).
struct ProcFdPath {
  explicit ProcFdPath(int fd) { std::snprintf(text, sizeof text, "/proc/self/fd/%d", fd); }
  char text[32];
};

// An unnamed file (O_TMPFILE) in the target's directory: no name exists until commit, so a process
// killed while writing (SIGKILL at a job's time limit, the OOM killer) leaves nothing behind. It is
// used only where the file can be named later through /proc/self/fd (linkat with AT_EMPTY_PATH needs
// CAP_DAC_READ_SEARCH); -1 where either is missing (overlayfs before Linux 6.6, 9p, no /proc).
int open_unnamed_in(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, kOutputFileMode);
  if (fd < 0) return -1;
  if (::access(ProcFdPath(fd).text, F_OK) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

OutputFile::~OutputFile() { abandon(); }

Status OutputFile::open(const std::string& path) {
  abandon();
  if (path.empty() || path.back() == '/') return fail("'" + path + "'", EISDIR);
  path_ = path;
  fd_ = open_unnamed_in(directory_of(path));
  if (fd_ >= 0) {
    unnamed_ = true;
    write_errno_ = 0;
    return Status::ok();
  }
  if (const Status created = create_named_temp(); !created.is_ok()) return created;
  write_errno_ = 0;
  return Status::ok();
}

Status OutputFile::create_named_temp() {
  for (int attempt = 0; attempt < 64; ++attempt) {
    temp_path_ = temp_name_for(path_);
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kOutputFileMode);
    if (fd_ >= 0) return Status::ok();
    if (errno != EEXIST) break;
  }
  const int err = errno;
  temp_path_.clear();
  return fail("cannot create a temporary file next to '" + path_ + "'", err);
}

// Gives the unnamed file a random hidden name next to the target, for rename to move onto it (linkat
// cannot replace an existing file). Only the two calls between here and rename leave a window in which
// a kill leaves the temporary.
int OutputFile::name_unnamed() {
  const ProcFdPath self(fd_);
  for (int attempt = 0; attempt < 64; ++attempt) {
    temp_path_ = temp_name_for(path_);
    if (::linkat(AT_FDCWD, self.text, AT_FDCWD, temp_path_.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      unnamed_ = false;
      return 0;
    }
    if (errno != EEXIST) break;
  }
  temp_path_.clear();
  return errno;
}

bool OutputFile::write(std::string_view bytes) {
  if (fd_ < 0) return false;
  if (write_errno_ != 0) return false;
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      write_errno_ = errno;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

Status OutputFile::commit() {
  if (fd_ < 0) return fail("'" + path_ + "'", EBADF);
  int err = write_errno_;
  std::string what = unnamed_ ? "cannot write the temporary file for '" + path_ + "'"
                              : "cannot write '" + temp_path_ + "'";
  if (err == 0 && ::fsync(fd_) != 0 && errno != EINVAL) {  // EINVAL: a file system without fsync
    err = errno;
  }
  if (err == 0 && unnamed_ && (err = name_unnamed()) != 0) {
    what = "cannot give the temporary file for '" + path_ + "' a name";
  }
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  unnamed_ = false;
  if (err == 0 && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    err = errno;
    what = "cannot rename '" + temp_path_ + "' to '" + path_ + "'";
  }
  if (err != 0) {
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
    temp_path_.clear();
    return fail(what, err);
  }
  temp_path_.clear();
  return Status::ok();
}

void OutputFile::abandon() {
  if (fd_ >= 0) {
    ::close(fd_);  // an unnamed file vanishes with its last descriptor
    fd_ = -1;
  }
  unnamed_ = false;
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

int OutputFileBuffer::overflow(int c) {
  if (sync() != 0) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

int OutputFileBuffer::sync() {
  const bool ok = file_.write(std::string_view(pbase(), static_cast<size_t>(pptr() - pbase())));
  setp(data_, data_ + sizeof data_);
  return ok ? 0 : -1;
}

Status OutputFileStream::open(const std::string& path) {
  clear();
  discard();
  const Status opened = file_.open(path);
  if (!opened.is_ok()) setstate(std::ios::badbit);
  return opened;
}

Status OutputFileStream::commit() {
  flush();  // a failed write is remembered by file_, which then refuses to commit
  return file_.commit();
}

Status write_file_replacing(const std::string& path, std::string_view contents) {
  OutputFile file;
  if (const Status opened = file.open(path); !opened.is_ok()) return opened;
  file.write(contents);
  return file.commit();
}

Status open_append_no_follow(const std::string& path, int* fd) {
  *fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, kOutputFileMode);
  if (*fd < 0) return fail("cannot open '" + path + "' for appending", errno);
  return Status::ok();
}

}  // namespace sentinel
