#pragma once
// The light guests (tests/lab/light/guests, CTest fixture light_guests) as the reliability tests
// use them: commands inside a guest, its link up or down, its NIC's MAC, a pvesim whose VMs carry
// those MACs, and the real Ansible guest port reaching them from the lab's controller namespace.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ansible/child_process.hpp"
#include "guest/port.hpp"

namespace pw::reliability {

class LightLab {
 public:
  // From `guests --lab $PW_LIGHT_LAB env`; throws when the lab is not up.
  static LightLab open();

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

  // The real guest port: ansible-playbook in the controller namespace over real SSH.
  std::unique_ptr<guest::GuestPort> ansible_port(const std::filesystem::path& work_dir,
                                                     std::chrono::seconds task_timeout) const;
};

ansible::ChildProcessResult run_command(std::vector<std::string> argv,
                                        std::chrono::seconds timeout = std::chrono::seconds(120));

}  // namespace pw::reliability
