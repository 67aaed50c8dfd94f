// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// src/settings: the controller's own settings file (kind: Controller) -- its model, its decoder
// and what the controller makes of it (the Proxmox client options). It may depend on policy (the
// YAML schema toolkit and the file handling it decodes through), diagnostics, proxmox and ansible
// (what a become user or method may be, checked where the playbooks use it) and observe (the
// observation channels' names); nothing
// in src/ depends on settings, only the controller does. The format is in policies/README.md.
#include <chrono>
#include <cstddef>
#include <string>

#include "diagnostics/error.hpp"
#include "observe/observe_port.hpp"

namespace pw::settings {

struct ProxmoxSettings {
  std::string url;  // https://host:8006
  // API token auth: token_id "user@realm!name" plus secret from file or environment.
  std::string token_id;
  std::string token_secret_file;
  std::string token_secret_env;
  // Ticket auth: user "name@realm" plus password from file or environment.
  std::string user;
  std::string password_file;
  std::string password_env;
  std::string ca_file;
  std::string fingerprint;  // pinned SHA-256 of the server certificate, colon-hex
  bool insecure_skip_verify = false;
  int max_in_flight = 16;
  std::chrono::milliseconds timeout{30000};
};

struct AnsibleSettings {
  std::string inventory;
  std::string playbook_command = "ansible-playbook";
  int forks = 16;
  std::chrono::milliseconds timeout{600000};  // per ansible-playbook run
  // Per guest and task (the guest's own `timeout`); default half the run's.
  std::chrono::milliseconds guest_timeout{300000};
  std::string private_key_file;
  std::string known_hosts_file;  // host keys are always checked; this names the file
  // The key of the inventory's Ansible Vault (an ansible_become_password): a file, never a value.
  std::string vault_password_file;
  std::string remote_user;
  // SSH connections shared within a run (ControlMaster/ControlPersist with dead-peer detection).
  // Off: one connection per task, for jump hosts or ssh wrappers that cannot multiplex.
  bool share_connections = true;
  // Privilege escalation for the tasks that need root (see ansible::Become). Off: the playbooks
  // name no become, and Ansible's own configuration decides for every task.
  bool become = false;
  std::string become_user;    // empty: Ansible's default (root)
  std::string become_method;  // empty: Ansible's default (sudo)
};

// spec.observe: how the guests' facts are read (observe/observe_port.hpp).
struct ObserveSettings {
  observe::Via via = observe::Via::ansible;
  observe::Access agent_access = observe::Access::exec;
  std::chrono::milliseconds agent_timeout{60000};  // one guest's facts through the agent
  int agent_per_node = 3;                          // agent calls at once per node (pvedaemon's workers)
};

struct ControllerSettings {
  ProxmoxSettings proxmox;
  AnsibleSettings ansible;
  ObserveSettings observe;
  std::string state_dir = "/var/lib/pathwarden";
  std::string policies_dir;
  // spec.retention: finished journals kept (the newest so many, none older than so many days),
  // and the fstab backups each guest keeps (the newest so many, none older than the days).
  std::size_t keep_journals = 200;
  int keep_guest_backups = 20;
  int keep_days = 30;
  SourcePos source;
};

}  // namespace pw::settings
