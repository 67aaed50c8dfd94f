// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/ssh_control.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>

#include "ansible/child_process.hpp"
#include "guest/tokens.hpp"

namespace pw::ansible {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxControlDir = 107 - 41;

// The pid a run directory is named by; nullopt for anything else in the parent.
std::optional<pid_t> pid_of(const fs::path& dir) {
  const auto name = dir.filename().string();
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc{} || end != name.data() + name.size() || pid <= 0) return std::nullopt;
  return pid;
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

void close_control_masters(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_socket(ec)) continue;
    // The control socket is a path, not a network address: no namespace prefix is needed.
    ChildProcessSpec spec;
    spec.argv = {"ssh", "-o", "ControlPath=" + entry.path().string(), "-O", "exit", "pathwarden-control-master"};
    spec.timeout = std::chrono::seconds(10);
    spec.kill_grace = std::chrono::seconds(1);
    (void)run_child_process(spec);  // best effort: a master that is gone already is fine
  }
}

std::optional<fs::path> make_run_control_dir(const fs::path& parent) {
  std::error_code ec;
  const auto own = parent / std::to_string(::getpid());
  if (own.string().size() > kMaxControlDir) return std::nullopt;
  if (!fs::create_directory(parent, ec) && ec) return std::nullopt;
  fs::permissions(parent, fs::perms::owner_all, ec);
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const auto pid = pid_of(entry.path());
    if (!pid || *pid == ::getpid() || alive(*pid) || !entry.is_directory(ec)) continue;
    close_control_masters(entry.path());  // a killed run's masters (ControlPersist ends them soon anyway)
    fs::remove_all(entry.path(), ec);
  }
  fs::remove_all(own, ec);  // a directory of an earlier process with this pid
  if (!fs::create_directory(own, ec)) return std::nullopt;
  fs::permissions(own, fs::perms::owner_all, ec);
  return own;
}

std::vector<std::pair<std::string, std::string>> ssh_environment(const SshOptions& options) {
  std::string args = "-o StrictHostKeyChecking=yes -o BatchMode=yes";
  // Ansible splits ssh_args as a shell would (shlex): a path with a space stays one argument.
  // A pinned known_hosts file is the only one: a key only in /etc/ssh/ssh_known_hosts is not taken.
  if (!options.known_hosts_file.empty()) {
    args += " -o " + guest::shell_quote("UserKnownHostsFile=" + options.known_hosts_file) +
            " -o GlobalKnownHostsFile=/dev/null";
  }
  std::vector<std::pair<std::string, std::string>> env{{"ANSIBLE_PIPELINING", "True"}};
  if (options.control_dir) {
    args += " -o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=5 -o ServerAliveCountMax=3";
    env.emplace_back("ANSIBLE_SSH_CONTROL_PATH_DIR", options.control_dir->string());
  }
  env.emplace_back("ANSIBLE_SSH_ARGS", std::move(args));
  return env;
}

}  // namespace pw::ansible
