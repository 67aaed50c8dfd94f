// SPDX-License-Identifier: GPL-3.0-or-later
#include "hook.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

extern char** environ;

namespace pvesim {

HookResult run_hook(const std::string& command, const std::string& event, int vmid, const std::string& config_json,
                    const std::string& extra, std::chrono::seconds timeout) {
  HookResult result;
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path =
      std::string(tmpdir != nullptr ? tmpdir : "/tmp") + "/pvesim-hook-" + std::to_string(vmid) + "-XXXXXX.json";
  const int fd = mkstemps(path.data(), 5);
  if (fd < 0) {
    result.last_error_line = "pvesim: cannot create the hook's config file: " + std::string(std::strerror(errno));
    return result;
  }
  {
    std::ofstream out(path);
    out << config_json;
  }
  ::close(fd);

  int pipefd[2];
  if (pipe(pipefd) != 0) {
    std::filesystem::remove(path);
    result.last_error_line = "pvesim: pipe failed";
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The hook (and the QEMU it may leave running) gets its own /dev/null for stdin: a process
  // that switches its stdin to non-blocking must never reach a description others share.
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  posix_spawn_file_actions_addclose(&actions, pipefd[1]);
  std::string vmid_text = std::to_string(vmid);
  std::vector<char*> argv{const_cast<char*>(command.c_str()), const_cast<char*>(event.c_str()), vmid_text.data(),
                          path.data()};
  if (!extra.empty()) argv.push_back(const_cast<char*>(extra.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, command.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    std::filesystem::remove(path);
    result.last_error_line = "cannot run hook '" + command + "': " + std::strerror(rc);
    return result;
  }

  // Wait for the hook process itself: a start hook may leave a daemon (QEMU) behind that still
  // holds the stderr pipe, so end-of-file cannot be the signal.
  fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string buffer;
  bool timed_out = false, exited = false, eof = false;
  int status = 0;
  while (true) {
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
    bool got_data = false;
    if (!eof) {
      pollfd p{pipefd[0], POLLIN, 0};
      if (poll(&p, 1, exited ? 0 : 100) > 0) {
        char chunk[4096];
        const ssize_t got = ::read(pipefd[0], chunk, sizeof chunk);
        if (got > 0) {
          buffer.append(chunk, static_cast<std::size_t>(got));
          got_data = true;
        } else if (got == 0) {
          eof = true;
        }
      }
    } else if (!exited) {
      usleep(20000);
    }
    if (exited && !got_data) break;
    if (!exited && std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
  }
  ::close(pipefd[0]);
  std::filesystem::remove(path);

  std::size_t start = 0;
  while (start < buffer.size()) {
    std::size_t nl = buffer.find('\n', start);
    if (nl == std::string::npos) nl = buffer.size();
    std::string line = buffer.substr(start, nl - start);
    start = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::cerr << "pvesim: hook " << event << " " << vmid << ": " << line << "\n";
    result.output.push_back(line);
    result.last_error_line = line;
  }
  if (timed_out) {
    result.last_error_line =
        "hook '" + command + "' " + event + " timed out after " + std::to_string(timeout.count()) + " s";
    return result;
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  result.ok = result.exit_code == 0;
  if (!result.ok && result.last_error_line.empty()) {
    result.last_error_line =
        "hook '" + command + "' " + event + " failed with exit code " + std::to_string(result.exit_code);
  }
  return result;
}

}  // namespace pvesim
