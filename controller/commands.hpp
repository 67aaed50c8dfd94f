#pragma once
// Each subcommand lives in its own cmd_*.cpp and is listed in main.cpp.
#include "cli.hpp"

namespace pw::cli {

Command validate_command();
Command proxmox_command();



}  // namespace pw::cli
