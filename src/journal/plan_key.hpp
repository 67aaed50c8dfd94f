// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The key that seals this controller's plan files (plan/plan_seal.hpp): 32 random bytes in
// <state>/plan.key, 0600, made on first use. Whoever can read it can already change the state
// directory, journals included; whoever can only edit a plan file cannot forge its seal.
#include <string>

#include "diagnostics/error.hpp"
#include "journal/state_dir.hpp"

namespace pw::journal {

Result<std::string> plan_key(const StateDir& state);

}  // namespace pw::journal
