// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Each guest script's arguments, described once: the .sh file's "pathwarden-args:" line must say
// exactly this (tests/guest/script_protocol_test.cpp reads the files), and the argv builders
// (probe_script_argv, apply_script_argv, ...) are checked against the fixed count. A word ending
// in "..." is a run of values, one in [brackets] optional.
#include <array>
#include <cstddef>
#include <string_view>

namespace pw::guest {

struct ScriptProtocol {
  std::string_view script;  // src/guest/scripts/NAME.sh
  std::string_view args;    // its "pathwarden-args:" line
};

inline constexpr std::array<ScriptProtocol, 8> kScriptProtocols{{
    {"facts", "fstab [name...]"},
    {"probe", "baseline remove cycles commit_path mode mount_point file dd..."},
    {"fstab_common", "fstab"},
    {"apply", "observed new backup words edit... activations..."},
    {"rollback", "backup backup_sha written activations..."},
    {"channels", "interface count [restore]"},
    {"docker_volumes", "(none)"},
    {"transport", "mount_point mount_point_as_in_proc_mounts mounted_as from to move|restore"},
}};

// How many arguments come first, one value each, before any optional or repeated one.
constexpr std::size_t fixed_argument_count(std::string_view args) {
  std::size_t n = 0;
  while (!args.empty()) {
    const auto space = args.find(' ');
    const auto word = args.substr(0, space);
    if (word.starts_with('[') || word.starts_with('(') || word.ends_with("...")) break;
    ++n;
    if (space == std::string_view::npos) break;
    args.remove_prefix(space + 1);
  }
  return n;
}

constexpr std::string_view script_args(std::string_view script) {
  for (const auto& p : kScriptProtocols) {
    if (p.script == script) return p.args;
  }
  return {};
}

}  // namespace pw::guest
