// SPDX-License-Identifier: GPL-3.0-or-later
#include "light_lab.hpp"

#include <stdlib.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "ansible/guest_port.hpp"
#include "ansible/ssh_control.hpp"

namespace pw::testing {
namespace {

const std::filesystem::path kGuests = std::filesystem::path(PW_SOURCE_DIR) / "tests" / "lab" / "light" / "guests";

}  // namespace

ansible::ChildProcessResult run_command(std::vector<std::string> argv, std::chrono::seconds timeout) {
  ansible::ChildProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = timeout;
  auto r = ansible::run_child_process(spec);
  if (!r) throw std::runtime_error(r.error().to_string());
  return *r;
}

LightLab LightLab::open() {
  const char* name = std::getenv("PW_LIGHT_LAB");
  return open(name != nullptr && *name != '\0' ? name : "light");
}

LightLab LightLab::open(const std::string& name) {
  LightLab lab;
  lab.name = name;
  auto r = run_command({kGuests.string(), "--lab", lab.name, "env"});
  if (r.exit_code != 0) {
    throw std::runtime_error("light guests are not up (the CTest fixture light_guests brings them up): " + r.err);
  }
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    const auto key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "LAB_STATE") lab.state_dir = value;
    if (key == "LAB_INVENTORY") lab.inventory = value;
    if (key == "LAB_CONFIG") lab.ansible_config = value;
    if (key == "LAB_NAMESPACE") lab.controller_namespace = value;
    if (key == "LAB_GUESTS") lab.guests = std::stoi(value);
  }
  return lab;
}

ansible::ChildProcessResult LightLab::exec(int i, std::vector<std::string> argv) const {
  std::vector<std::string> full{kGuests.string(), "--lab", name, "exec", std::to_string(i)};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_command(std::move(full));
}

std::string LightLab::must(int i, std::vector<std::string> argv) const {
  std::string shown;
  for (const auto& a : argv) shown += " " + a;
  auto r = exec(i, std::move(argv));
  if (r.exit_code != 0) throw std::runtime_error("in guest " + std::to_string(i) + ":" + shown + ": " + r.err);
  return r.out;
}

std::string LightLab::mac(int i) const {
  auto m = file(i, "/sys/class/net/eth0/address");
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

void LightLab::set_link(int i, bool up) const {
  auto r = run_command({"ip", "-n", guest_namespace(i), "link", "set", "eth0", up ? "up" : "down"});
  if (r.exit_code != 0) throw std::runtime_error("ip link set eth0 in " + guest_namespace(i) + ": " + r.err);
}

ansible::RunnerOptions LightLab::runner_options(const std::filesystem::path& work_dir, bool share) const {
  ansible::RunnerOptions s;
  s.command_prefix = {"ip", "netns", "exec", controller_namespace};
  s.work_dir = work_dir;
  ansible::SshOptions ssh;
  ssh.known_hosts_file = state_dir + "/known_hosts";
  if (share) {
    // Short and unique: a control socket's path has at most 107 bytes (ssh_control.hpp).
    std::string dir = "/tmp/pw-cp-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp " + dir);
    ssh.control_dir = dir;
  }
  s.control_dir = ssh.control_dir;  // the runner closes the masters and removes it
  s.environment = ansible::ssh_environment(ssh);
  s.environment.emplace_back("ANSIBLE_CONFIG", ansible_config);
  return s;
}

std::unique_ptr<guest::GuestPort> LightLab::ansible_port(const std::filesystem::path& work_dir,
                                                         std::chrono::seconds task_timeout,
                                                         std::vector<std::filesystem::path> extra_inventories) const {
  auto s = runner_options(work_dir);
  ansible::GuestPortOptions o;
  o.inventories = {inventory};
  for (auto& i : extra_inventories) o.inventories.push_back(std::move(i));
  o.forks = 10;
  o.run_timeout = task_timeout * 4;
  o.playbook.guest_timeout = task_timeout;
  return ansible::make_guest_port(std::make_unique<ansible::AnsiblePlaybookRunner>(std::move(s)), o);
}

}  // namespace pw::testing
