// SPDX-License-Identifier: GPL-3.0-or-later
#include "files/atomic_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace pw::files {
namespace {

Error system_error(const std::string& what, const std::filesystem::path& where, int err, std::string hint = {}) {
  return Error{what + ": " + std::strerror(err), where.string(), std::move(hint)};
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { close(); }
  int get() const { return fd_; }
  int close() {
    const int r = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return r;
  }

 private:
  int fd_;
};

}  // namespace

Status write_all(int fd, std::string_view data, const std::filesystem::path& where) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(system_error("cannot write", where, errno, "check free space and the filesystem"));
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

namespace {

enum class Place { replace, only_new };

// Writes `content` to a temp file beside `target`, then puts it in place: rename (replacing) or
// link (failing with EEXIST when the name is taken). Returns false when only_new found it taken.
Result<bool> write_and_place(const std::filesystem::path& target, std::string_view content, Visibility visibility,
                             Place place) {
  static std::atomic<unsigned> counter{0};
  const auto path = target.is_absolute() ? target : std::filesystem::absolute(target);
  const auto dir = path.parent_path();
  const auto tmp =
      dir / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const mode_t mode = visibility == Visibility::readable ? 0644 : 0600;
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    return std::unexpected(system_error("cannot create a temp file next to it", path, errno,
                                        "check that the directory exists and is writable"));
  }
  auto fail = [&](Error e) -> Result<bool> {
    ::unlink(tmp.c_str());
    return std::unexpected(std::move(e));
  };
  // The mode first, whatever the umask: nobody else can open a private file meanwhile.
  if (::fchmod(fd.get(), mode) != 0) return fail(system_error("cannot set the mode of", tmp, errno));
  if (auto s = write_all(fd.get(), content, tmp); !s) return fail(s.error());
  if (::fsync(fd.get()) != 0) return fail(system_error("cannot fsync", tmp, errno));
  if (fd.close() != 0) return fail(system_error("cannot close", tmp, errno));
  if (place == Place::replace) {
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      return fail(system_error("cannot rename into place", path, errno,
                               "a directory of that name, or a read-only file system?"));
    }
  } else {
    // link(2) never replaces: a name taken (a file, a link, a directory) stays as it is.
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      if (err == EEXIST) return false;
      return std::unexpected(system_error("cannot link into place", path, err, "a read-only file system?"));
    }
    ::unlink(tmp.c_str());
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return std::unexpected(system_error("cannot open directory", dir, errno));
  Fd d(dfd);
  if (::fsync(d.get()) != 0) return std::unexpected(system_error("cannot fsync directory", dir, errno));
  return true;
}

}  // namespace

Status write_atomically(const std::filesystem::path& target, std::string_view content, Visibility visibility) {
  auto r = write_and_place(target, content, visibility, Place::replace);
  if (!r) return std::unexpected(r.error());
  return {};
}

Result<bool> write_new(const std::filesystem::path& target, std::string_view content, Visibility visibility) {
  return write_and_place(target, content, visibility, Place::only_new);
}

}  // namespace pw::files
