// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/sudo_check.hpp"

#include "guest/tokens.hpp"

namespace pw::guest {

std::string SudoCheck::blocker(std::string_view host) const {
  const std::string h(host);
  switch (outcome) {
    case Outcome::asks:
      return "sudo in " + h + " asks for a password" + (message.empty() ? "" : " (" + message + ")") +
             " and the inventory gives none, so the change, made as root through become, would fail there: add "
             "ansible_become_password for " +
             h +
             " (in an Ansible vault; README \"A sudo that asks for a password\"), or the NOPASSWD sudoers entry "
             "of policies/README.md";
    case Outcome::absent:
      return "sudo is not installed in " + h +
             " and spec.ansible.become uses it: install sudo there, or set become_method to the guest's (su, doas)";
    case Outcome::root:
    case Outcome::no_password:
    case Outcome::password_given:
      break;
  }
  return {};
}

Result<SudoCheck> parse_sudo_check(std::string_view body, std::string_view where) {
  const auto text = trim(body);
  const auto space = text.find(' ');
  const auto word = text.substr(0, space);
  SudoCheck out;
  if (word == "root") {
    out.outcome = SudoCheck::Outcome::root;
  } else if (word == "nopasswd") {
    out.outcome = SudoCheck::Outcome::no_password;
  } else if (word == "given") {
    out.outcome = SudoCheck::Outcome::password_given;
  } else if (word == "absent") {
    out.outcome = SudoCheck::Outcome::absent;
  } else if (word == "asks") {
    out.outcome = SudoCheck::Outcome::asks;
    if (space != std::string_view::npos) out.message = std::string(trim(text.substr(space + 1)));
  } else {
    return fail("not a sudo check: '" + std::string(text.substr(0, 80)) + "'", std::string(where),
                "expected root, nopasswd, given, absent or asks");
  }
  return out;
}

}  // namespace pw::guest
