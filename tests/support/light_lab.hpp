// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The light guests (tests/lab/light/guests, CTest fixture light_guests) as the C++ tests use them
// (Ansible, reliability, benchmarks): the lab's files, commands inside a guest, its link up or
// down, its NIC's MAC, and the real Ansible guest port reaching them from the lab's controller
// namespace. (The Python tests' counterpart: Guests in tests/pwtest/cli_world.py.)
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ansible/child_process.hpp"
#include "ansible/runner.hpp"
#include "guest/port.hpp"

namespace pw::testing {

class LightLab {
 public:
  // From `guests --lab $PW_LIGHT_LAB env` (lab "light" when unset); throws when the lab is not up.
  static LightLab open();
  // The same for the named lab.
  static LightLab open(const std::string& name);

  int guests = 0;
  std::string name;
  std::string state_dir;
  std::string inventory;
  std::string ansible_config;
  std::string controller_namespace;

  std::string host(int i) const { return "guest" + std::to_string(i); }
  std::string guest_namespace(int i) const { return "pw-" + name + "-g" + std::to_string(i); }

  // Runs argv inside guest i (its network and mount namespaces); throws if it cannot start.
  ansible::ChildProcessResult exec(int i, std::vector<std::string> argv) const;
  // Same, and throws with its stderr unless it exits 0.
  std::string must(int i, std::vector<std::string> argv) const;
  std::string file(int i, const std::string& path) const { return must(i, {"cat", "--", path}); }
  std::string mac(int i) const;  // eth0's
  void set_link(int i, bool up) const;

  // ansible-playbook in the controller namespace, with SSH as pathwarden's runtime sets it up
  // (ansible::ssh_environment): host keys pinned in the lab's known_hosts, and with `share` the
  // connections shared within the runner's life, control sockets in a fresh directory of its own.
  ansible::RunnerOptions runner_options(const std::filesystem::path& work_dir, bool share = true) const;

  // The real guest port: ansible-playbook in the controller namespace over real SSH.
  // `extra_inventories` come after the lab's (host variables there win, e.g. ansible_user).
  std::unique_ptr<guest::GuestPort> ansible_port(const std::filesystem::path& work_dir,
                                                 std::chrono::seconds task_timeout,
                                                 std::vector<std::filesystem::path> extra_inventories = {}) const;
};

ansible::ChildProcessResult run_command(std::vector<std::string> argv,
                                        std::chrono::seconds timeout = std::chrono::seconds(120));

}  // namespace pw::testing
