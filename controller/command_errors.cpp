// SPDX-License-Identifier: GPL-3.0-or-later
#include "command_errors.hpp"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <iostream>
#include <span>
#include <string>
#include <vector>

namespace pw::cli {
namespace {

ErrorChannels g_channels;
std::vector<boost::json::object> g_problems;

void say(const std::string& line) {
  if (g_channels.json_log) {
    // The logger is configured by now (main.cpp configures it before any command runs); a
    // failure before that is said by main as a plain line.
    spdlog::error("{}", line);
  } else {
    std::cerr << line << "\n";
  }
}

boost::json::object entry(std::string_view summary, std::string_view where, std::string_view hint) {
  boost::json::object o{{"severity", "error"}, {"summary", summary}};
  if (!where.empty()) o["where"] = where;
  if (!hint.empty()) o["hint"] = hint;
  return o;
}

}  // namespace

void set_error_channels(ErrorChannels channels) {
  g_channels = channels;
}

bool asks_json_output(std::span<const std::string> argv) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--output=json" || (argv[i] == "--output" && i + 1 < argv.size() && argv[i + 1] == "json"))
      return true;
  }
  return false;
}

void report_problem(const Diagnostic& d) {
  say(d.to_string());
  g_problems.push_back(entry(d.message, d.pos.to_string(), {}));
}

int fail_command(std::string_view command, const Error& e, int code) {
  say("pathwarden" + (command.empty() ? std::string() : " " + std::string(command)) + ": " + e.to_string());
  if (g_channels.json_stdout) {
    boost::json::array diagnostics;
    for (auto& p : g_problems) diagnostics.emplace_back(std::move(p));
    g_problems.clear();
    diagnostics.emplace_back(entry(e.what, e.where, e.hint));
    boost::json::object doc{{"format", "pathwarden-diagnostics"},
                            {"format_version", "1.0"},
                            {"command", command},
                            {"exit_code", code},
                            {"diagnostics", std::move(diagnostics)}};
    std::cout << boost::json::serialize(doc) << "\n" << std::flush;
  }
  return code;
}

}  // namespace pw::cli
