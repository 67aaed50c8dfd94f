// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The state directory (journals, locks, last results): private to the user pathwarden runs as.
// Directories are 0700 and files 0600; anything looser is refused or repaired with a message.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "journal/posix_file.hpp"

namespace pw::journal {

enum class LoosePermissions {
  refuse,  // any group/other permission bit is an error naming the path and the chmod to run
  // Group/other read or search bits are removed, with a warning. Group/other *write* is still
  // refused: someone else may have written there, so the contents cannot be trusted.
  repair,
};

// What a permission check changed, for the caller to log.
using PermissionWarnings = std::vector<std::string>;

// Checks an open directory (want 0700) or regular file (want 0600): owned by the effective
// user, no group/other write; other looseness refused or repaired per `loose`.
Status check_private(int fd, const std::filesystem::path& path, bool directory, LoosePermissions loose,
                     PermissionWarnings* warnings);

// Opens (creating 0700 when missing) a directory that must stay private. Symbolic links are
// refused unless follow_symlink (the state root itself may be a link an admin made).
Result<UniqueFd> open_private_directory(const std::filesystem::path& path, LoosePermissions loose,
                                        PermissionWarnings* warnings, bool follow_symlink = false);

// Opens a private file in a private directory: O_NOFOLLOW, created 0600 when `flags` has
// O_CREAT, then checked like check_private.
Result<UniqueFd> open_private_file(const std::filesystem::path& path, int flags, LoosePermissions loose,
                                   PermissionWarnings* warnings);

// The names of the files in a private directory that end in `suffix`, suffix removed, sorted;
// hidden files (temp files of an interrupted write) are skipped.
Result<std::vector<std::string>> list_private_directory(const std::filesystem::path& dir, std::string_view suffix,
                                                        LoosePermissions loose, PermissionWarnings* warnings);

class StateDir {
 public:
  // Creates the directory and its parts when missing and checks their permissions.
  static Result<StateDir> open(std::filesystem::path root, LoosePermissions loose = LoosePermissions::repair);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path journal_dir() const { return root_ / "journal"; }
  std::filesystem::path lock_dir() const { return root_ / "locks"; }
  std::filesystem::path result_dir() const { return root_ / "results"; }
  LoosePermissions loose() const { return loose_; }
  const PermissionWarnings& warnings() const { return warnings_; }

 private:
  std::filesystem::path root_;
  LoosePermissions loose_ = LoosePermissions::repair;
  PermissionWarnings warnings_;
};

// A file name for a key such as a guest or policy name: [A-Za-z0-9_-] and inner dots kept,
// everything else %XX, so "pve1/101" → "pve1%2F101" and no name is hidden or a path.
std::string file_name_for(std::string_view key);
std::string key_from_file_name(std::string_view name);

}  // namespace pw::journal
