// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The "MAJOR.MINOR" format_version of the files pathwarden writes (plan files, JSON reports), as
// `terraform show -json` versions its output: MINOR grows when fields are added (a reader of the
// same major ignores what it does not know), MAJOR when a field changes meaning or type or goes
// away (a reader refuses a major it does not know, saying so).
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace pw {

struct FormatVersion {
  int major = 0;
  int minor = 0;
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// "1.0" → {1, 0}; nullopt for anything but two non-negative whole numbers joined by a dot.
inline std::optional<FormatVersion> parse_format_version(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  FormatVersion v;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), text.data() + dot, v.major);
  if (ec != std::errc{} || p != text.data() + dot || dot == 0) return std::nullopt;
  const auto [q, ec2] = std::from_chars(text.data() + dot + 1, end, v.minor);
  if (ec2 != std::errc{} || q != end || dot + 1 == text.size() || v.major < 0 || v.minor < 0) return std::nullopt;
  return v;
}

}  // namespace pw
