// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Small POSIX file helpers for durable state: an owning descriptor, full writes, fsync of a
// directory. (Whole files are replaced by files/atomic_write.hpp.) Errors come back as values naming the path.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::journal {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

// "what: strerror(errno)" as an Error at `where`.
Error system_error(std::string what, const std::filesystem::path& where, int err, std::string hint = {});

// Writes every byte (retrying short writes and EINTR).
Status write_all(int fd, std::string_view data, const std::filesystem::path& where);

// The whole content of an open file, from offset 0.
Result<std::string> read_all(int fd, const std::filesystem::path& where);
// The content of an open file from `offset` to its end.
Result<std::string> read_from(int fd, std::uint64_t offset, const std::filesystem::path& where);

// Makes a directory entry change (create, rename, unlink) durable.
Status fsync_directory(const std::filesystem::path& dir);

}  // namespace pw::journal
