// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/runner.hpp"

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "ansible/child_process.hpp"
#include "ansible/ssh_control.hpp"
#include "files/atomic_write.hpp"

namespace pw::ansible {

namespace fs = std::filesystem;

namespace {

Status write_text(const fs::path& path, const std::string& text) {
  return files::write_atomically(path, text, files::Visibility::owner_only);
}

Result<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read the file", path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

AnsiblePlaybookRunner::~AnsiblePlaybookRunner() {
  if (!settings_.control_dir) return;
  close_control_masters(*settings_.control_dir);
  std::error_code ec;
  fs::remove_all(*settings_.control_dir, ec);  // the run's own directory (ssh_control.hpp)
}

std::vector<std::pair<std::string, std::string>> AnsiblePlaybookRunner::environment() const {
  // Machine-readable output, and the security defaults whatever ansible.cfg says.
  std::vector<std::pair<std::string, std::string>> env{
      {"ANSIBLE_STDOUT_CALLBACK", "ansible.posix.jsonl"},
      {"ANSIBLE_JSON_INDENT", "0"},
      {"ANSIBLE_HOST_KEY_CHECKING", "True"},
      {"ANSIBLE_RETRY_FILES_ENABLED", "False"},
      {"ANSIBLE_NOCOLOR", "1"},
      {"ANSIBLE_FORCE_COLOR", "0"},
  };
  for (const auto& kv : settings_.environment) env.push_back(kv);
  return env;
}

std::vector<std::string> AnsiblePlaybookRunner::command_for(const RunRequest& request, const fs::path& playbook) const {
  std::vector<std::string> argv = settings_.command_prefix;
  argv.push_back(settings_.ansible_playbook);
  for (const auto& inventory : request.inventories) {
    argv.push_back("--inventory");
    argv.push_back(inventory.string());
  }
  argv.push_back("--forks");
  argv.push_back(std::to_string(std::max(1, request.forks)));
  // The SSH arguments pathwarden sets (host-key pinning, control sockets) as extra vars too: they
  // outrank every inventory variable, so a host's ansible_ssh_args cannot replace them, nor its
  // ansible_host_key_checking turn checking off. ansible_ssh_common_args/extra_args only add
  // options after these, and ssh takes the first value of an option.
  for (const auto& [key, value] : settings_.environment) {
    if (key != "ANSIBLE_SSH_ARGS") continue;
    argv.push_back("--extra-vars");
    argv.push_back(boost::json::serialize(boost::json::object{
        {"ansible_ssh_args", value}, {"ansible_host_key_checking", true}, {"ansible_ssh_host_key_checking", true}}));
  }
  argv.push_back(playbook.string());
  return argv;
}

Result<PlaybookRun> AnsiblePlaybookRunner::run(const RunRequest& request) {
  if (settings_.work_dir.empty()) return fail("no work directory for playbooks configured");
  auto dir = settings_.work_dir / request.phase;
  Playbook playbooks[] = {request.playbook};
  if (auto s = write_playbooks(playbooks, dir); !s) return std::unexpected(s.error());
  auto playbook_path = fs::absolute(dir / request.playbook.yaml_file());

  ChildProcessSpec spec;
  spec.argv = command_for(request, playbook_path);
  spec.environment = environment();
  spec.working_directory = dir;
  spec.timeout = request.timeout;
  spec.kill_grace = settings_.kill_grace;
  auto child = run_child_process(spec);
  if (!child) return std::unexpected(child.error().with_where(request.phase + " playbook"));

  if (settings_.record_dir) {
    auto rec = *settings_.record_dir;
    std::error_code ec;
    fs::create_directories(rec, ec);
    if (auto s = write_text(rec / (request.phase + ".jsonl"), child->out); !s) return std::unexpected(s.error());
    if (auto s = write_text(rec / (request.phase + ".stderr"), child->err); !s) return std::unexpected(s.error());
    auto meta = std::to_string(child->exit_code) + (child->timed_out ? " timed-out\n" : "\n");
    if (auto s = write_text(rec / (request.phase + ".exit"), meta); !s) return std::unexpected(s.error());
  }
  return read_run(request.phase, child->out, child->err, child->exit_code, child->timed_out, request.playbook.hosts);
}

Result<RecordedRun> load_recorded_run(const fs::path& dir, const std::string& phase) {
  RecordedRun run;
  run.phase = phase;
  auto jsonl = read_text(dir / (phase + ".jsonl"));
  if (!jsonl) return std::unexpected(jsonl.error());
  run.jsonl = std::move(*jsonl);
  if (auto err = read_text(dir / (phase + ".stderr"))) run.stderr_text = std::move(*err);
  auto meta = read_text(dir / (phase + ".exit"));
  if (!meta) return std::unexpected(meta.error());
  std::istringstream in(*meta);
  std::string flag;
  if (!(in >> run.exit_code)) return fail("no exit code in the recording", (dir / (phase + ".exit")).string());
  in >> flag;
  run.timed_out = flag == "timed-out";
  return run;
}

Result<PlaybookRun> RecordedPlaybookRunner::run(const RunRequest& request) {
  requests_.push_back(request);
  if (runs_.empty()) return fail("no recorded run left for phase " + request.phase);
  auto run = std::move(runs_.front());
  runs_.pop_front();
  if (run.phase != request.phase) {
    return fail("the next recorded run is for phase " + run.phase + ", not " + request.phase);
  }
  return read_run(run.phase, run.jsonl, run.stderr_text, run.exit_code, run.timed_out, request.playbook.hosts);
}

}  // namespace pw::ansible
