// SPDX-License-Identifier: GPL-3.0-or-later
#include "build_info/build_info.hpp"

namespace pw::build_info {

std::string version_line() {
  return "pathwarden " + std::string(kVersion) + " (commit " + std::string(commit()) + ")";
}

}  // namespace pw::build_info
