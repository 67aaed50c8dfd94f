// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Whether `become` (sudo) will work in a guest without asking (issue 41 item 10): the facts
// script runs `sudo -n true` as the SSH user when the settings become root with sudo, and
// Ansible tells it whether the inventory gives a become password. A sudo that would ask with
// nothing to answer is found by `plan` and `--check`, before a real run fails halfway.
#include <cstdint>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct SudoCheck {
  enum class Outcome : std::uint8_t {
    root,            // logged in as root: nothing to become
    no_password,     // sudo -n true worked (a NOPASSWD entry, or a cached ticket)
    password_given,  // sudo asks, and the inventory gives ansible_become_password
    asks,            // sudo asks (or refuses), and nothing answers it
    absent,          // no sudo in the guest
  };
  Outcome outcome = Outcome::no_password;
  std::string message;  // sudo's own first line, for `asks`

  bool usable() const { return outcome != Outcome::asks && outcome != Outcome::absent; }
  // Why a change that needs root cannot run in `host`, with the remedy; empty when usable.
  std::string blocker(std::string_view host) const;
};

// The facts script's "sudo" section: "root", "nopasswd", "given", "absent" or "asks LINE".
Result<SudoCheck> parse_sudo_check(std::string_view body, std::string_view where);

}  // namespace pw::guest
