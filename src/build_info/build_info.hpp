// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What this binary is: its version (CMake's project version) and the git commit it was built
// from (read at build time; "unknown" outside a git checkout, e.g. from a release tarball).
// `pathwarden --version` prints both, the Prometheus textfile carries them
// (pathwarden_build_info); plan files and reports carry the version (`pathwarden_version`).
#include <string>
#include <string_view>

namespace pw::build_info {

inline constexpr std::string_view kVersion = PW_VERSION;

// "78c0987a1b2c", "78c0987a1b2c-dirty", "v0.1.0-3-g78c0987a1b2c", or "unknown".
std::string_view commit();

// "pathwarden 0.1.0 (commit 78c0987a1b2c)"
std::string version_line();

}  // namespace pw::build_info
