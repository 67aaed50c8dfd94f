// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/state_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>

namespace pw::journal {
namespace {

std::string octal(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

}  // namespace

Status check_private(int fd, const std::filesystem::path& path, bool directory, LoosePermissions loose,
                     PermissionWarnings* warnings) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::unexpected(system_error("cannot stat", path, errno));
  if (directory && !S_ISDIR(st.st_mode))
    return fail("is not a directory", path.string(), "move it away; pathwarden keeps its state in a directory there");
  if (!directory && !S_ISREG(st.st_mode))
    return fail("is not a regular file", path.string(), "move it away; pathwarden recreates its state files");
  if (st.st_uid != ::geteuid())
    return fail(
        "is owned by uid " + std::to_string(st.st_uid) + ", but pathwarden runs as uid " + std::to_string(::geteuid()),
        path.string(), "chown it to the user pathwarden runs as, or run pathwarden as its owner");
  const mode_t want = directory ? 0700 : 0600;
  const mode_t mode = st.st_mode & 0777;
  const mode_t extra = mode & 077;
  const std::string chmod = "chmod " + octal(want).substr(1) + " " + path.string();
  if (extra & 022)
    return fail("is writable by group or others (mode " + octal(mode) + "), so its contents cannot be trusted",
                path.string(), "check it for changes you did not make, then " + chmod);
  if (extra && loose == LoosePermissions::refuse)
    return fail("has mode " + octal(mode) + "; pathwarden keeps its state private (" + octal(want) + ")", path.string(),
                chmod);
  if (extra || (mode & want) != want) {
    const mode_t fixed = (mode & ~static_cast<mode_t>(077)) | want;
    if (::fchmod(fd, fixed) != 0) return std::unexpected(system_error("cannot chmod", path, errno, chmod));
    if (warnings)
      warnings->push_back(path.string() + ": permissions tightened from " + octal(mode) + " to " + octal(fixed));
  }
  return {};
}

Result<UniqueFd> open_private_directory(const std::filesystem::path& path, LoosePermissions loose,
                                        PermissionWarnings* warnings, bool follow_symlink) {
  if (::mkdir(path.c_str(), 0700) == 0) {
    // A directory made and then lost in a crash would take the journal inside it along.
    const auto parent = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    if (auto s = fsync_directory(parent); !s) return std::unexpected(s.error());
  } else if (errno != EEXIST) {
    return std::unexpected(
        system_error("cannot create directory", path, errno, "check the parent directory's permissions"));
  }
  const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow_symlink ? 0 : O_NOFOLLOW);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd) {
    if (errno == ELOOP || errno == ENOTDIR) {
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
        return fail("is a symbolic link; pathwarden does not follow links inside its state directory", path.string(),
                    "replace the link with a directory");
      return fail("is not a directory", path.string(), "move it away; pathwarden keeps its state in a directory there");
    }
    return std::unexpected(system_error("cannot open directory", path, errno));
  }
  if (auto s = check_private(fd.get(), path, true, loose, warnings); !s) return std::unexpected(s.error());
  return fd;
}

Result<UniqueFd> open_private_file(const std::filesystem::path& path, int flags, LoosePermissions loose,
                                   PermissionWarnings* warnings) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    if (errno == ELOOP)
      return fail("is a symbolic link; pathwarden does not follow links inside its state directory", path.string(),
                  "remove the link");
    return std::unexpected(system_error("cannot open", path, errno));
  }
  if (auto s = check_private(fd.get(), path, false, loose, warnings); !s) return std::unexpected(s.error());
  return fd;
}

Result<std::vector<std::string>> list_private_directory(const std::filesystem::path& path, std::string_view suffix,
                                                        LoosePermissions loose, PermissionWarnings* warnings) {
  auto fd = open_private_directory(path, loose, warnings);
  if (!fd) return std::unexpected(fd.error());
  DIR* dir = ::fdopendir(fd->get());
  if (!dir) return std::unexpected(system_error("cannot list", path, errno));
  fd->release();  // closedir closes it
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name.starts_with('.') || name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
    name.remove_suffix(suffix.size());
    names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<StateDir> StateDir::open(std::filesystem::path root, LoosePermissions loose) {
  if (root.empty()) return fail("the state directory is not set", "state directory", "set it in the configuration");
  StateDir dir;
  dir.root_ = std::move(root);
  dir.loose_ = loose;
  std::error_code ec;
  if (const auto parent = dir.root_.parent_path(); !parent.empty()) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return fail("cannot create " + parent.string() + ": " + ec.message(), dir.root_.string());
  }
  if (auto fd = open_private_directory(dir.root_, loose, &dir.warnings_, true); !fd) return std::unexpected(fd.error());
  for (const auto& sub : {dir.journal_dir(), dir.lock_dir(), dir.result_dir()})
    if (auto fd = open_private_directory(sub, loose, &dir.warnings_); !fd) return std::unexpected(fd.error());
  return dir;
}

std::string file_name_for(std::string_view key) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    const bool plain = std::isalnum(c) || c == '_' || c == '-' || (c == '.' && i > 0);
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string key_from_file_name(std::string_view name) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size() && nibble(name[i + 1]) >= 0 && nibble(name[i + 2]) >= 0) {
      out.push_back(static_cast<char>(nibble(name[i + 1]) * 16 + nibble(name[i + 2])));
      i += 2;
    } else {
      out.push_back(name[i]);
    }
  }
  return out;
}

}  // namespace pw::journal
