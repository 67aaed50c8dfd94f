// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// NFS mount options as nfs(5) and mount(8) define them: names, value types and the
// combinations that contradict each other.
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "policy/model.hpp"

namespace pw::policy {

struct WrittenOption {
  std::string text;  // "nconnect=8" as written
  SourcePos pos;     // where it was written
};

struct CheckedOptions {
  std::vector<MountOption> options;  // well-formed options, in the order written
  Diagnostics diagnostics;
};

// server: the policy's server address, which an explicit addr= must agree with.
CheckedOptions check_mount_options(const std::vector<WrittenOption>& written, const std::string& server);

}  // namespace pw::policy
