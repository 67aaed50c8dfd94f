// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The SSH control sockets of one pathwarden run: Ansible's shared connections (ControlMaster,
// ControlPersist) live in a directory of the run's own, <state>/ssh/<pid>, so that a run closing
// its masters at its end never closes those of another run on the same host (two shards, or a
// timer run beside an operator's), and a run killed before it could close them leaves a
// directory the next run recognises by its dead pid and clears.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pw::ansible {

// `ssh -O exit` for every control socket in dir (best effort: a master already gone is fine).
void close_control_masters(const std::filesystem::path& dir);

// Under parent (made 0700 if missing): clears the directories of runs whose process is gone, then
// makes this process's own. nullopt when it cannot, or when its path is too long for a control
// socket (Ansible names a socket DIR/<40 hex digits>; a Unix socket path has at most 107 bytes):
// connections are then not shared.
std::optional<std::filesystem::path> make_run_control_dir(const std::filesystem::path& parent);

// How pathwarden's ansible-playbook runs use SSH. One place, so that the controller
// (controller/runtime.cpp), the tests' runners and the benchmarks run Ansible the same way.
struct SshOptions {
  std::string known_hosts_file;  // empty: ssh's default; host keys are checked either way
  // Set: connections are shared within the run (ControlMaster/ControlPersist), with control
  // sockets in this directory (make_run_control_dir). Unset: one connection per task.
  std::optional<std::filesystem::path> control_dir;
};

// The ANSIBLE_* environment for those options (the runner adds ANSIBLE_HOST_KEY_CHECKING itself):
// StrictHostKeyChecking, BatchMode (never a prompt), modules piped over the task's session
// (ANSIBLE_PIPELINING), and with a control directory
// ControlMaster=auto, ControlPersist=60s and dead-peer detection (ServerAliveInterval=5 ×
// ServerAliveCountMax=3: a guest whose link went away is given up after ~15 s instead of holding
// every later task on a dead shared connection until the run's time limit). These replace
// Ansible's default ssh_args, so ansible.cfg cannot turn host-key checking off.
std::vector<std::pair<std::string, std::string>> ssh_environment(const SshOptions& options);

}  // namespace pw::ansible
