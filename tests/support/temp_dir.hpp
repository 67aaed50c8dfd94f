// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Fresh directories under $TMPDIR (else /tmp) for tests: make_temp_dir() leaves the directory to
// the caller, TempDir removes it with everything in it when it goes out of scope.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace pw::testing {

// PREFIX-XXXXXX, created mode 0700 by mkdtemp; throws when it cannot be made.
inline std::string make_temp_dir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
  return tmpl;
}

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "pw-test") : path_(make_temp_dir(prefix)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline unsigned mode_of(const std::filesystem::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) throw std::runtime_error("stat failed: " + p.string());
  return st.st_mode & 07777;
}

}  // namespace pw::testing
