// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <optional>

namespace pw::ansible {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int read = -1;
  int write = -1;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  for (auto& s : items) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

// fork/exec with pipes, a time limit and a process group. Long because everything between fork
// and exec must be async-signal-safe and in one place, where it can be checked line by line.
Result<ChildProcessResult> run_child_process(const ChildProcessSpec& spec) {
  if (spec.argv.empty()) return fail("no program to run");
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> argv_storage = spec.argv;
  std::vector<std::string> env_storage = merged_environment(spec.environment);
  auto argv = c_strings(argv_storage);
  auto envp = c_strings(env_storage);
  std::string cwd = spec.working_directory.string();

  Pipe out, err, exec_error;
  for (Pipe* p : {&out, &err, &exec_error}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno), spec.argv[0]);
    p->read = fds[0];
    p->write = fds[1];
  }

  pid_t pid = ::fork();
  if (pid < 0) return fail(std::string("fork: ") + std::strerror(errno), spec.argv[0]);
  if (pid == 0) {
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out.write, 1);
    ::dup2(err.write, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      int e = errno;
      (void)!::write(exec_error.write, &e, sizeof e);
      ::_exit(127);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    (void)!::write(exec_error.write, &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from here, so the group exists before any kill
  close_fd(out.write);
  close_fd(err.write);
  close_fd(exec_error.write);

  int exec_errno = 0;
  if (::read(exec_error.read, &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    close_fd(exec_error.read);
    close_fd(out.read);
    close_fd(err.read);
    ::waitpid(pid, nullptr, 0);
    return fail("cannot run " + spec.argv[0] + ": " + std::strerror(exec_errno), {},
                "install it (see tests/packages.txt) or fix the configured path");
  }
  close_fd(exec_error.read);

  ChildProcessResult result;
  auto deadline = Clock::now() + spec.timeout;
  // Instants as values, "never" as the clock's end (an optional's payload read under its flag
  // is what g++ 12 at -O2 calls maybe-uninitialized).
  constexpr auto kNever = Clock::time_point::max();
  auto kill_at = kNever;
  bool exited = false;
  int status = 0;
  auto drain_until = kNever;

  // Past the deadline: SIGTERM to the whole group, SIGKILL after the grace period.
  auto enforce_deadline = [&](Clock::time_point now) {
    if (!result.timed_out && now >= deadline) {
      result.timed_out = true;
      ::kill(-pid, SIGTERM);
      kill_at = now + spec.kill_grace;
    }
    if (now >= kill_at) {
      ::kill(-pid, SIGKILL);
      kill_at = kNever;
    }
  };

  while (out.read >= 0 || err.read >= 0) {
    auto now = Clock::now();
    enforce_deadline(now);
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      // A grandchild that escaped the group may still hold the pipes; do not wait for it long.
      drain_until = Clock::now() + std::chrono::seconds(5);
    }
    if (now >= drain_until) break;

    pollfd fds[2] = {{out.read, POLLIN, 0}, {err.read, POLLIN, 0}};
    int n = ::poll(fds, 2, 100);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? result.out : result.err).append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        close_fd(i == 0 ? out.read : err.read);
      }
    }
  }
  close_fd(out.read);
  close_fd(err.read);

  while (!exited) {
    enforce_deadline(Clock::now());
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    ::usleep(50 * 1000);
  }
  if (result.timed_out) ::kill(-pid, SIGKILL);  // whatever of the group is still there
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace pw::ansible
