// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Each subcommand lives in its own cmd_*.cpp and is listed in main.cpp; what the engine-driving
// ones share is in command_support.hpp.
#include "cli.hpp"

namespace pw::cli {

Command validate_command();
Command plan_command();
Command apply_command();
Command reconcile_command();
Command verify_command();
Command recover_command();
Command status_command();
Command proxmox_command();
Command report_command();
Command import_command();

}  // namespace pw::cli
