// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Ansible adapter of guest::GuestPort: one generated playbook and one ansible-playbook run per
// call, for all guests of it.
#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

#include "ansible/playbooks.hpp"
#include "ansible/runner.hpp"
#include "guest/port.hpp"
#include "timing/sleeper.hpp"

namespace pw::ansible {

struct GuestPortOptions {
  std::vector<std::filesystem::path> inventories;
  int forks = 16;
  std::chrono::seconds run_timeout{600};
  PlaybookOptions playbook;
  // Waits between "is it back?" rounds after a restart; nullptr: real time.
  timing::Sleeper* sleeper = nullptr;
};

std::unique_ptr<guest::GuestPort> make_guest_port(std::unique_ptr<PlaybookRunner> runner, GuestPortOptions options);

}  // namespace pw::ansible
