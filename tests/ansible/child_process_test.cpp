// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/child_process.hpp"

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace pw::ansible;
using namespace std::chrono_literals;

TEST_CASE("a child's output, exit code and environment come back") {
  ChildProcessSpec spec;
  spec.argv = {"sh", "-c", "echo out; echo \"$PW_TEST_VALUE\" >&2; pwd; exit 3"};
  spec.environment = {{"PW_TEST_VALUE", "a b $(c)"}};
  spec.working_directory = "/";
  auto r = run_child_process(spec);
  REQUIRE(r);
  CHECK(r->exit_code == 3);
  CHECK(r->out == "out\n/\n");
  CHECK(r->err == "a b $(c)\n");
  CHECK_FALSE(r->timed_out);
}

TEST_CASE("a child killed by a signal reports it") {
  ChildProcessSpec spec;
  spec.argv = {"sh", "-c", "kill -KILL $$"};
  auto r = run_child_process(spec);
  REQUIRE(r);
  CHECK(r->exit_code == -1);
  CHECK(r->signal == SIGKILL);
}

TEST_CASE("a program that does not exist is an error, not a crash") {
  ChildProcessSpec spec;
  spec.argv = {"/nonexistent/pathwarden-no-such-program"};
  auto r = run_child_process(spec);
  REQUIRE_FALSE(r);
  CHECK(r.error().what.find("cannot run /nonexistent/pathwarden-no-such-program") == 0);
}

TEST_CASE("a timeout ends the child and everything it started") {
  ChildProcessSpec spec;
  // The grandchild ignores SIGTERM, so only the group-wide SIGKILL ends it.
  spec.argv = {"sh", "-c", "sh -c 'trap \"\" TERM; echo $$; exec sleep 600' & wait"};
  // The limit only has to come after the grandchild printed its PID (a fork and two execs): 3 s
  // leaves a loaded, sanitized machine two orders of magnitude of room.
  spec.timeout = 3s;
  spec.kill_grace = 200ms;
  auto r = run_child_process(spec);
  REQUIRE(r);
  CHECK(r->timed_out);
  auto pid = std::stoi(r->out);
  REQUIRE(pid > 0);
  // Reparented to init and reaped, or a zombie at most: never still sleeping. The kill is
  // asynchronous, so give the kernel a moment to finish the exit.
  auto stat = std::filesystem::path("/proc") / std::to_string(pid) / "stat";
  auto finished = [&] {
    std::ifstream in(stat);
    std::string line;
    if (!std::getline(in, line)) return true;
    return line.find(") Z") != std::string::npos || line.find(") X") != std::string::npos;
  };
  bool gone = finished();
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(50ms);
    gone = finished();
  }
  CHECK(gone);
}
