// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Runs a VM's hook command: `CMD EVENT VMID CONFIG_JSON_FILE [EXTRA]`, without a shell.
#include <chrono>
#include <string>
#include <vector>

namespace pvesim {

struct HookResult {
  bool ok = false;
  int exit_code = -1;
  std::string last_error_line;      // last non-empty line the hook wrote to stderr
  std::vector<std::string> output;  // its stderr lines, for the task log
};

// `config_json` is written to a temporary file that lives while the hook runs.
HookResult run_hook(const std::string& command, const std::string& event, int vmid, const std::string& config_json,
                    const std::string& extra, std::chrono::seconds timeout);

}  // namespace pvesim
