// Helpers every test area may use. TempDir: a fresh directory under /tmp for one test (or one fake
// tree), removed with everything in it when the object goes. A forked child that leaves with _exit()
// removes nothing; the parent's object does.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace sentinel::testing {

class TempDir {
 public:
  // "/tmp/<prefix>-XXXXXX"; path() is empty when mkdtemp failed (check ok()).
  explicit TempDir(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace sentinel::testing
