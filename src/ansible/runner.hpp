// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Running a phase: one ansible-playbook process for all guests of that phase (forks do the
// fan-out), never one process per guest. The engine talks to PlaybookRunner, so unit tests can
// replay recorded runs while integration tests run the real thing.
#include <chrono>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ansible/playbook_run.hpp"
#include "ansible/playbooks.hpp"
#include "diagnostics/error.hpp"

namespace pw::ansible {

struct RunRequest {
  std::string phase;  // "facts", "apply", ...: names the run in messages and recordings
  Playbook playbook;
  std::vector<std::filesystem::path> inventories;  // empty: Ansible's configured inventory
  int forks = 20;
  std::chrono::seconds timeout{std::chrono::minutes(30)};  // the whole run
};

class PlaybookRunner {
 public:
  virtual ~PlaybookRunner() = default;
  // Fails when the run could not start or ansible-playbook rejected it before running anything;
  // per-guest failures, unreachable guests and timeouts are in the report.
  virtual Result<PlaybookRun> run(const RunRequest& request) = 0;
};

struct RunnerOptions {
  std::string ansible_playbook = "ansible-playbook";
  // Put in front of the command, e.g. {"ip", "netns", "exec", "pw-light-ctl"} for the light lab.
  std::vector<std::string> command_prefix;
  std::filesystem::path work_dir;  // each run writes its playbook to work_dir/PHASE/ (kept for review)
  std::vector<std::pair<std::string, std::string>> environment;  // e.g. ANSIBLE_CONFIG
  std::chrono::seconds kill_grace{10};
  std::optional<std::filesystem::path> record_dir;  // save stdout/stderr/exit code per phase
  // Where the SSH control sockets of shared connections live (ANSIBLE_SSH_CONTROL_PATH_DIR), if
  // connections are shared: this run's own directory (ssh_control.hpp); the runner closes those
  // masters and removes it when it is destroyed.
  std::optional<std::filesystem::path> control_dir;
};

class AnsiblePlaybookRunner final : public PlaybookRunner {
 public:
  explicit AnsiblePlaybookRunner(RunnerOptions settings) : settings_(std::move(settings)) {}
  // Ends the shared SSH connections its runs left (`ssh -O exit` per control socket), so none
  // outlives the pathwarden run that opened it.
  ~AnsiblePlaybookRunner() override;
  AnsiblePlaybookRunner(const AnsiblePlaybookRunner&) = delete;
  AnsiblePlaybookRunner& operator=(const AnsiblePlaybookRunner&) = delete;
  Result<PlaybookRun> run(const RunRequest& request) override;

  // The command line and environment a request runs with (for logs and tests).
  std::vector<std::string> command_for(const RunRequest& request, const std::filesystem::path& playbook) const;
  std::vector<std::pair<std::string, std::string>> environment() const;

 private:
  RunnerOptions settings_;
};

// A run as it came out of ansible-playbook, to replay.
struct RecordedRun {
  std::string phase;
  std::string jsonl;
  std::string stderr_text;
  int exit_code = 0;
  bool timed_out = false;
};

// Reads what RunnerOptions::record_dir saved for `phase`.
Result<RecordedRun> load_recorded_run(const std::filesystem::path& dir, const std::string& phase);

// Replays recorded runs in order and keeps the requests it was given, for the engine's unit tests.
class RecordedPlaybookRunner final : public PlaybookRunner {
 public:
  explicit RecordedPlaybookRunner(std::vector<RecordedRun> runs) : runs_(runs.begin(), runs.end()) {}
  Result<PlaybookRun> run(const RunRequest& request) override;
  const std::vector<RunRequest>& requests() const { return requests_; }

 private:
  std::deque<RecordedRun> runs_;
  std::vector<RunRequest> requests_;
};

}  // namespace pw::ansible
