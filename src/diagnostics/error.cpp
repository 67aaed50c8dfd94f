// SPDX-License-Identifier: GPL-3.0-or-later
#include "diagnostics/error.hpp"

#include <cstdio>

namespace pw {

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string SourcePos::to_string() const {
  if (line <= 0) return escape_controls(file);
  return escape_controls(file) + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string Error::to_string() const {
  std::string out;
  if (!where.empty()) out = where + ": ";
  out += what;
  if (!hint.empty()) out += " (" + hint + ")";
  return escape_controls(out);
}

std::string Diagnostic::to_string() const {
  return pos.to_string() + ": " + escape_controls(message);
}

}  // namespace pw
