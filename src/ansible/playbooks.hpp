// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The playbooks pathwarden runs in guests, one per phase for all guests at once. A Playbook is
// the YAML (structure only, emitted with yaml-cpp) plus a JSON vars file holding every value that
// came from a policy or from observation. Every string in that file is marked unsafe for
// Ansible's templating, and commands take argv lists, so no value can change what runs.
//
// Every task is an ansible.builtin.raw script (constant text; the values its arguments, which no
// login shell parses: see script_task in playbooks.cpp): nothing is needed in the guest but
// /bin/sh, coreutils (base64, timeout, head) and the tools the scripts call, no Python.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/operations.hpp"
#include "guest/port.hpp"

namespace pw::ansible {

struct Playbook {
  std::string name;  // file stem: NAME.yml and NAME.vars.json
  std::string yaml;
  std::string vars_json;  // empty when the playbook needs no data
  std::vector<std::string> hosts;

  std::string yaml_file() const { return name + ".yml"; }
  std::string vars_file() const { return name + ".vars.json"; }
};

// Privilege escalation as the settings file asks for it (spec.ansible.become). It covers what
// needs root: the apply, rollback and channels playbooks whole (fstab, backups, mount, ethtool
// -L) and the probe's dd and its clean-up (so the share sees the same identity as with root SSH:
// root, squashed or not by the export). Facts and counter reads stay with the SSH user. Without
// it the playbooks name no become at all, so Ansible's own configuration (inventory
// ansible_become, ansible.cfg [privilege_escalation], ANSIBLE_BECOME) applies to every task.
struct Become {
  std::string user;    // become_user; empty = Ansible's default (root)
  std::string method;  // become_method; empty = Ansible's default (sudo)
};

struct PlaybookOptions {
  // Each guest's limit on each task (a hard NFS mount can hang): the guest's own `timeout` ends
  // the script there; below the run's limit (spec.ansible.guest_timeout), so one hung guest
  // fails alone.
  std::chrono::seconds guest_timeout{300};
  std::string fstab_path = "/etc/fstab";
  std::optional<Become> become;
  // The fstab backups a guest keeps in its backup directory after an apply: the newest so many,
  // none older than so many days (settings spec.retention), never the apply's own.
  int keep_backups = 20;
  int backup_days = 30;
};

// Checks a become user or method before it goes into a playbook (Ansible templates keywords).
Status validate_become(const Become& become);

// `wanted`: per guest, host names its resolver is asked for (getent ahosts, GuestFacts::resolved)
// and whether Docker's volumes are read (as root: GuestFacts::docker).
Result<Playbook> facts_playbook(std::span<const std::string> hosts, const PlaybookOptions& options = {},
                                const guest::FactsRequests& wanted = {});
Result<Playbook> apply_playbook(std::span<const guest::FstabChange> changes, const PlaybookOptions& options = {});
Result<Playbook> rollback_playbook(std::span<const guest::FstabRestore> restores, const PlaybookOptions& options = {});
Result<Playbook> probe_playbook(std::span<const guest::ProbeRequest> probes, const PlaybookOptions& options = {});
Result<Playbook> channels_playbook(std::span<const guest::ChannelsRequest> requests,
                                   const PlaybookOptions& options = {});
Result<Playbook> transport_playbook(std::span<const guest::TransportMove> moves, const PlaybookOptions& options = {});

// Task names the result readers look for.
namespace task {
inline constexpr const char* report = "Report mounts, transports, counters and interfaces";
inline constexpr const char* docker_volumes = "Read Docker's Compose volumes";
// The fstab phases' one task each; their stages are guest::ChangeStage (guest/change_script.hpp).
inline constexpr const char* apply = "Write the new fstab with a backup and re-make the mounts";
inline constexpr const char* rollback = "Put the fstab back from the backup and re-make the mounts";
inline constexpr const char* probe = "Read the counters around the probe bytes moved bypassing the page cache";
inline constexpr const char* set_channels = "Set the combined queue count";
inline constexpr const char* move_transport = "Move the NFS client's transports";
}  // namespace task

// Checks a name before it goes into a play's host list, where Ansible reads patterns.
Status validate_host_name(std::string_view host);

// Writes NAME.yml (and NAME.vars.json) for each playbook into `dir`, creating it.
Status write_playbooks(std::span<const Playbook> playbooks, const std::filesystem::path& dir);

}  // namespace pw::ansible
