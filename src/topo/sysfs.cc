#include "topo/sysfs.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "os/directory.h"
#include "os/os.h"

namespace sentinel::topo {

std::optional<std::string> read_text(const std::string& path) {
  // Through the OS layer, so tests can make topology reads fail (os/os.h).
  const int fd = os::open_read(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string s;
  char buf[4096];
  for (;;) {
    const ssize_t n = os::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      os::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    s.append(buf, static_cast<size_t>(n));
  }
  os::close(fd);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::optional<uint64_t> read_u64(const std::string& path) {
  auto text = read_text(path);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0') return std::nullopt;
  return static_cast<uint64_t>(v);
}

static bool parse_int(const std::string& s, int* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *out = std::atoi(s.c_str());
  return true;
}

bool parse_id_list(const std::string& text, std::vector<int>* out) {
  out->clear();
  std::vector<int> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!parse_int(item, &lo)) return false;
      hi = lo;
    } else if (!parse_int(item.substr(0, dash), &lo) || !parse_int(item.substr(dash + 1), &hi) ||
               hi < lo || hi - lo > 65536) {
      return false;
    }
    for (int i = lo; i <= hi; ++i) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  *out = std::move(ids);
  return true;
}

std::string format_id_list(const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(ids[i]);
    if (j > i) s += '-' + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::optional<uint64_t> meminfo_bytes(const std::string& meminfo_text, const std::string& key) {
  std::stringstream ss(meminfo_text);
  std::string line;
  const std::string needle = " " + key + ":";
  while (std::getline(ss, line)) {
    auto pos = line.find(needle);
    if (pos == std::string::npos) continue;
    std::stringstream rest(line.substr(pos + needle.size()));
    unsigned long long value = 0;
    std::string unit;
    if (!(rest >> value)) return std::nullopt;
    rest >> unit;
    return unit == "kB" ? value * 1024ull : value;
  }
  return std::nullopt;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  os::list_directory(path.c_str(), [&](const char* name) { names.emplace_back(name); });
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace sentinel::topo
