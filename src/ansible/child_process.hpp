// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Runs one program to completion with a deadline. The child leads its own process group, so a
// timeout ends it and everything it started (ansible-playbook's forks and their ssh clients).
#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::ansible {

struct ChildProcessSpec {
  std::vector<std::string> argv;                                 // argv[0] is looked up in PATH
  std::vector<std::pair<std::string, std::string>> environment;  // set on top of ours
  std::filesystem::path working_directory;                       // empty: ours
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  std::chrono::milliseconds kill_grace{std::chrono::seconds(10)};  // SIGTERM, then SIGKILL
};

struct ChildProcessResult {
  int exit_code = -1;  // -1 when ended by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Fails only when the program could not be started at all.
Result<ChildProcessResult> run_child_process(const ChildProcessSpec& spec);

}  // namespace pw::ansible
