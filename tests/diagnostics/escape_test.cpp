// SPDX-License-Identifier: GPL-3.0-or-later
// Text from outside made one terminal line (issue 39, item 5): file names, guest output, API values.
#include <catch2/catch.hpp>

#include "diagnostics/error.hpp"

TEST_CASE("control characters become \\xNN; tabs, quotes and UTF-8 stay") {
  CHECK(pw::escape_controls("a\nb\x1b[31mc\rd\x7f") == "a\\x0ab\\x1b[31mc\\x0dd\\x7f");
  CHECK(pw::escape_controls("tab\there 'quoted' \xc3\xa9t\xc3\xa9") == "tab\there 'quoted' \xc3\xa9t\xc3\xa9");
}

TEST_CASE("an error and a diagnostic print as one line whatever their parts hold") {
  const pw::Error e{"guest said: line one\nE 12:00:00 forged line", "host\x1b]0;title\x07", "fix\r"};
  const auto text = e.to_string();
  CHECK(text.find('\n') == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text == "host\\x1b]0;title\\x07: guest said: line one\\x0aE 12:00:00 forged line (fix\\x0d)");
  const pw::Diagnostic d{{"policies/evil\nname.yaml", 3, 1}, "bad\x1b[2J"};
  CHECK(d.to_string() == "policies/evil\\x0aname.yaml:3:1: bad\\x1b[2J");
}
