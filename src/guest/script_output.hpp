// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How every guest script frames its output, and the one reader of that framing.
//
// A script starts by reading a fresh random token inside the guest (a read of
// /proc/sys/kernel/random/uuid with the shell's own `read`: no fork) and prints
//
//     @@pathwarden begin TOKEN
//
// then "@@TOKEN WORDS..." before each section or stage, and "@@TOKEN end" when it is done. The
// token exists only in the script's memory and, after the fact, in its output; nothing a guest's
// user controls can print it first: not a mount's name in /proc/mounts (FUSE lets anyone name a
// mount "@@pathwarden end"), not a file name in dd's message, not a policy value. A fixed mark
// could be forged by all three, and a token chosen by the controller would sit in the command
// line every guest user can read while the script runs. Lines before the begin line (a login
// shell's `echo` in .bashrc, a motd) are ignored; a later "@@pathwarden ..." line is content.
// The shell side is src/guest/scripts/marks.sh (guest::scripts::marks), which every script starts with.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

inline constexpr std::string_view kBeginMark = "@@pathwarden begin ";

struct ScriptSection {
  std::vector<std::string> words;  // the mark's words ("read", "before", "12.50")
  std::string body;                // the lines after it, each ending in "\n"
  int first_line = 0;              // 1-based line of the body's first line in the output
};

struct ScriptOutput {
  std::vector<ScriptSection> sections;  // in order; anything after "end" is not read
  bool finished = false;                // "@@TOKEN end" seen
};

// What one section may hold. The guest's own cap on a task's whole output is larger
// (ansible/playbooks.cpp); a section over this is refused rather than read in part: a cut
// /proc/mounts would look like unmounted shares.
inline constexpr std::size_t kMaxSectionBytes = std::size_t{8} << 20;

// Splits a script's stdout. `what` names the report in messages ("facts report"), `where` the
// guest. No begin line: an error saying the script did not start. A section over
// `max_section_bytes`: an error naming it. An unfinished output is returned as such (the
// callers say what a missing end means for them).
Result<ScriptOutput> split_script_output(std::string_view text, std::string_view what, std::string_view where,
                                         std::size_t max_section_bytes = kMaxSectionBytes);

// Output in the framing, for tests and stand-ins: the begin line with `token`, then each section.
std::string framed_output(std::string_view token, const std::vector<std::pair<std::string, std::string>>& sections,
                          bool finished = true);

}  // namespace pw::guest
