// SPDX-License-Identifier: GPL-3.0-or-later
// Each run's SSH control sockets in a directory of its own: made 0700, a dead run's cleared, a
// live run's left alone, none when the path would be too long for a socket.
#include "ansible/ssh_control.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "temp_dir.hpp"

using pw::ansible::make_run_control_dir;
using pw::ansible::ssh_environment;
namespace fs = std::filesystem;

namespace {

// The pid of a process that has exited and been reaped: no process has it now (until reused).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

}  // namespace

TEST_CASE("a run's control directory is its own; a dead run's is cleared, a live run's kept") {
  pw::testing::TempDir tmp;
  const auto parent = tmp.path() / "ssh";
  fs::create_directory(parent);
  const auto dead = parent / std::to_string(dead_pid());
  const auto live = parent / std::to_string(::getppid());
  const auto other = parent / "not-a-run";
  for (const auto& d : {dead, live, other}) {
    fs::create_directory(d);
    std::ofstream(d / "left-over") << "x";
  }

  const auto own = make_run_control_dir(parent);
  REQUIRE(own);
  CHECK(*own == parent / std::to_string(::getpid()));
  CHECK(fs::is_directory(*own));
  CHECK(pw::testing::mode_of(*own) == 0700);
  CHECK(pw::testing::mode_of(parent) == 0700);
  CHECK_FALSE(fs::exists(dead));           // its run is gone
  CHECK(fs::exists(live / "left-over"));   // its run may still use it
  CHECK(fs::exists(other / "left-over"));  // not a run's: not ours to remove

  SECTION("the same process asking again starts from an empty directory") {
    std::ofstream(*own / "stale") << "x";
    REQUIRE(make_run_control_dir(parent));
    CHECK(fs::is_empty(*own));
  }
}

TEST_CASE("no control directory where a socket path would be too long") {
  pw::testing::TempDir tmp;
  const auto deep = tmp.path() / std::string(80, 'd');
  CHECK_FALSE(make_run_control_dir(deep));
  CHECK_FALSE(fs::exists(deep));
}

namespace {

std::string env_value(const std::vector<std::pair<std::string, std::string>>& env, const std::string& key) {
  std::string found;
  int seen = 0;
  for (const auto& [k, v] : env) {
    if (k == key) {
      found = v;
      ++seen;
    }
  }
  REQUIRE(seen <= 1);  // one value per key: no later entry silently wins
  return found;
}

}  // namespace

TEST_CASE("Ansible's SSH environment: host keys checked, shared connections only with a control directory") {
  pw::ansible::SshOptions o;
  o.known_hosts_file = "/etc/pathwarden/known hosts";
  const auto alone = ssh_environment(o);
  const auto args = env_value(alone, "ANSIBLE_SSH_ARGS");
  CHECK_THAT(args, Catch::Contains("-o StrictHostKeyChecking=yes -o BatchMode=yes"));
  // shlex-split by Ansible: the space stays inside one argument.
  CHECK_THAT(args,
             Catch::Contains("-o 'UserKnownHostsFile=/etc/pathwarden/known hosts' -o GlobalKnownHostsFile=/dev/null"));
  CHECK_THAT(args, !Catch::Contains("ControlMaster"));
  CHECK(env_value(alone, "ANSIBLE_SSH_CONTROL_PATH_DIR").empty());
  CHECK(env_value(alone, "ANSIBLE_PIPELINING") == "True");

  o.control_dir = "/var/lib/pathwarden/ssh/42";
  const auto shared = ssh_environment(o);
  // ControlPersist with dead-peer detection: a dead shared connection is dropped within ~15 s.
  CHECK_THAT(env_value(shared, "ANSIBLE_SSH_ARGS"),
             Catch::Contains("-o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=5 "
                             "-o ServerAliveCountMax=3"));
  CHECK(env_value(shared, "ANSIBLE_SSH_CONTROL_PATH_DIR") == "/var/lib/pathwarden/ssh/42");
}
