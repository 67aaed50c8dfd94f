// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "files/atomic_write.hpp"

namespace pw::journal {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Error system_error(std::string what, const std::filesystem::path& where, int err, std::string hint) {
  return Error{std::move(what) + ": " + std::strerror(err), where.string(), std::move(hint)};
}

Status write_all(int fd, std::string_view data, const std::filesystem::path& where) {
  return files::write_all(fd, data, where);
}

Result<std::string> read_all(int fd, const std::filesystem::path& where) {
  return read_from(fd, 0, where);
}

Result<std::string> read_from(int fd, std::uint64_t from, const std::filesystem::path& where) {
  std::string out;
  char buf[65536];
  auto offset = static_cast<off_t>(from);
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(system_error("cannot read", where, errno));
    }
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    offset += n;
  }
}

Status fsync_directory(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return std::unexpected(system_error("cannot open directory", dir, errno));
  if (::fsync(fd.get()) != 0) return std::unexpected(system_error("cannot fsync directory", dir, errno));
  return {};
}

}  // namespace pw::journal
