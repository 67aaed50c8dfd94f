// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The hosts an Ansible inventory names, as Ansible itself reads it (`ansible-inventory --list`),
// so static files, directories, scripts and inventory plugins (community.general.proxmox) all
// count: what `pathwarden validate` checks every policy's guest.host against.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::ansible {

struct InventoryHosts {
  std::set<std::string> hosts;
  std::vector<std::string> warnings;  // Ansible's "[WARNING]: ..." lines (an unparsable source)
};

// `playbook_command` is the settings' ansible-playbook; ansible-inventory is looked up beside it.
// `vault_password_file`: the settings' key of a vaulted inventory (empty: none).
Result<InventoryHosts> read_inventory(const std::vector<std::string>& inventories, const std::string& playbook_command,
                                      std::chrono::milliseconds timeout, const std::string& vault_password_file = {});

// The JSON `ansible-inventory --list` prints: every host of `_meta.hostvars` and of every group.
Result<std::set<std::string>> inventory_hosts_from_json(std::string_view json_text);

}  // namespace pw::ansible
