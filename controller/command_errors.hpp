// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A command's failure, said once for every reader (issue 41 item 8). stderr gets the line a
// person reads — a JSON log line under --log-format json, like every other stderr line — and
// under --output json stdout also gets a diagnostics document (as `terraform -json` does), so a
// pipeline that parses stdout never reads nothing:
//   {"format": "pathwarden-diagnostics", "format_version": "1.0", "command": "plan", "exit_code": 1,
//    "diagnostics": [{"severity": "error", "summary": "...", "where": "...", "hint": "..."}]}
#include <span>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::cli {

struct ErrorChannels {
  bool json_stdout = false;  // --output json
  bool json_log = false;     // --log-format json
};
// Set once the command line is read (main.cpp); until then errors are plain lines.
void set_error_channels(ErrorChannels channels);

// "--output json" among raw arguments, for a failure before they are parsed.
bool asks_json_output(std::span<const std::string> argv);

// One problem of many (a policy file's line): on stderr now, kept for the document.
void report_problem(const Diagnostic& d);

// The command's failure: its line on stderr, then (--output json) the document with every
// problem reported before it. Returns `code`.
int fail_command(std::string_view command, const Error& e, int code = 1);

}  // namespace pw::cli
