// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one way pathwarden writes a file (reports, the Prometheus textfile, plans, HTML, results,
// playbooks): a temp file of a unique name created with O_EXCL|O_NOFOLLOW in the target's own
// directory, its mode set before any byte goes in, fsync, rename over the target, fsync of the
// directory. A link planted at the target or at any temp name is never followed: rename replaces
// the link itself, never the file it points to, and an existing temp name makes the create fail.
// Readers see the old content or the new, even across power loss.
#include <sys/types.h>

#include <filesystem>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::files {

enum class Visibility {
  owner_only,  // 0600: plans, results, playbooks (they carry fstab contents and policy names)
  readable,    // 0644: reports and the Prometheus textfile, which node_exporter reads as another user
};

Status write_atomically(const std::filesystem::path& path, std::string_view content,
                        Visibility visibility = Visibility::owner_only);

// The same, but never over an existing name (a file, a link, anything): false when the name is
// taken, and nothing is written. For files the operator owns once written (`pathwarden import`).
Result<bool> write_new(const std::filesystem::path& path, std::string_view content,
                       Visibility visibility = Visibility::readable);

// Writes every byte to an open descriptor (retrying short writes and EINTR).
Status write_all(int fd, std::string_view data, const std::filesystem::path& where);

}  // namespace pw::files
