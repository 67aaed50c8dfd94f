// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Text helpers shared by the policy parsers (model.cpp, time_window.cpp).
#include <string_view>

namespace pw::policy {

// Without the spaces and tabs around it: how a YAML scalar such as " 2 GiB " or "Mon-Fri "
// is read. Newlines are not trimmed: a value that has one is refused by its parser.
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace pw::policy
