// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "ansible/child_process.hpp"
#include "ansible/guest_port.hpp"
#include "ansible/ssh_control.hpp"
#include "command_errors.hpp"
#include "observe/observe_port.hpp"
#include "policy/selection.hpp"
#include "proxmox/agent_client.hpp"
#include "proxmox/client.hpp"
#include "settings/loader.hpp"
#include "settings/proxmox_options.hpp"
#include "settings_file.hpp"
#include "stop_signals.hpp"

namespace pw::cli {

Result<std::unique_ptr<Runtime>> make_runtime(const GlobalOptions& globals, RuntimeNeeds needs,
                                              reconcile::EngineOptions engine_options,
                                              reconcile::ProgressSink progress) {
  auto loaded = load_settings(globals);
  if (!loaded) return std::unexpected(loaded.error());
  return make_runtime(std::move(*loaded), globals, needs, std::move(engine_options), std::move(progress));
}

Result<std::unique_ptr<Runtime>> make_runtime(settings::ControllerSettings loaded, const GlobalOptions& globals,
                                              RuntimeNeeds needs, reconcile::EngineOptions engine_options,
                                              reconcile::ProgressSink progress) {
  auto rt = std::make_unique<Runtime>();
  rt->settings = std::move(loaded);
  const auto& s = rt->settings;
  // The playbooks are the same whether run here or written by `plan --emit-playbooks`.
  if (s.ansible.become) rt->playbook_options.become = ansible::Become{s.ansible.become_user, s.ansible.become_method};
  rt->playbook_options.keep_backups = s.keep_guest_backups;
  rt->playbook_options.backup_days = s.keep_days;

  auto state = journal::StateDir::open(s.state_dir);
  if (!state) return std::unexpected(state.error());
  for (const auto& w : state->warnings()) spdlog::warn("{}", w);
  rt->state = std::make_unique<journal::StateDir>(std::move(*state));
  rt->journals = std::make_unique<journal::FileJournalStore>(*rt->state);
  rt->locks = std::make_unique<journal::FlockGuestLocks>(*rt->state, rt->clock);
  rt->results = std::make_unique<journal::FilePolicyResultStore>(*rt->state);

  if (needs.proxmox) {
    auto opts = settings::proxmox_client_options(s);
    if (!opts) return std::unexpected(opts.error().with_where("spec.proxmox in " + settings_file(globals).string()));
    opts->sleeper = &rt->sleeper;
    if (s.proxmox.insecure_skip_verify) {
      spdlog::warn("TLS verification of {} is OFF (insecure_skip_verify): anyone on the path can read the API token",
                   s.proxmox.url);
    }
    auto client = proxmox::Client::create(std::move(*opts));
    if (!client) return std::unexpected(client.error());
    if (s.observe.via != observe::Via::ansible) {
      rt->agent = std::make_unique<proxmox::ApiGuestAgent>(
          **client, proxmox::GuestAgentOptions{.per_node = s.observe.agent_per_node});
    }
    rt->api = std::move(*client);
  }
  if (needs.guests) {
    ansible::RunnerOptions a;
    a.ansible_playbook = s.ansible.playbook_command;
    a.work_dir = rt->state->root() / "playbooks";
    // Host keys are always checked; the settings may name the known_hosts file to use.
    // Modules are piped over the task's SSH session instead of copied first (with become, a
    // sudoers `requiretty` would refuse that: see policies/README.md, spec.ansible.become).
    // Connections are shared within a run (spec.ansible.share_connections, on by default, as Ansible
    // does: one handshake per guest per phase instead of one per task), with dead-peer detection
    // (ansible::ssh_environment). The control sockets live in the run's own directory under the
    // private state directory (<state>/ssh/<pid>: another run on the host never shares or closes
    // them); the runner closes their masters and removes it when it is done.
    ansible::SshOptions ssh;
    ssh.known_hosts_file = s.ansible.known_hosts_file;
    if (s.ansible.share_connections) {
      ssh.control_dir = ansible::make_run_control_dir(rt->state->root() / "ssh");
      if (!ssh.control_dir) {
        spdlog::debug(
            "SSH connections are not shared: no control socket directory under {} (a path longer than a "
            "Unix socket allows?)",
            (rt->state->root() / "ssh").string());
      }
    }
    a.control_dir = ssh.control_dir;
    for (auto& kv : ansible::ssh_environment(ssh)) a.environment.push_back(std::move(kv));
    if (!s.ansible.private_key_file.empty())
      a.environment.emplace_back("ANSIBLE_PRIVATE_KEY_FILE", s.ansible.private_key_file);
    if (!s.ansible.vault_password_file.empty())
      a.environment.emplace_back("ANSIBLE_VAULT_PASSWORD_FILE", s.ansible.vault_password_file);
    if (!s.ansible.remote_user.empty()) a.environment.emplace_back("ANSIBLE_REMOTE_USER", s.ansible.remote_user);
    ansible::GuestPortOptions g;
    g.inventories = {s.ansible.inventory};
    g.forks = s.ansible.forks;
    g.run_timeout = std::chrono::duration_cast<std::chrono::seconds>(s.ansible.timeout);
    g.playbook = rt->playbook_options;
    g.playbook.guest_timeout = std::chrono::duration_cast<std::chrono::seconds>(s.ansible.guest_timeout);
    g.sleeper = &rt->sleeper;
    rt->guests = ansible::make_guest_port(std::make_unique<ansible::AnsiblePlaybookRunner>(std::move(a)), g);
    // Facts through the guest agent; changes (and the reads that belong to them) stay over SSH.
    if (rt->agent) {
      rt->guests = observe::make_observe_port(
          *rt->agent, std::move(rt->guests),
          observe::ObserveOptions{.via = s.observe.via,
                                  .access = s.observe.agent_access,
                                  .fstab_path = rt->playbook_options.fstab_path,
                                  .deadline = std::chrono::duration_cast<std::chrono::seconds>(s.observe.agent_timeout),
                                  .api_identity = s.proxmox.token_id.empty() ? s.proxmox.user : s.proxmox.token_id});
    }
  }
  if (rt->api && rt->guests) {
    engine_options.stop_requested = [] { return stop_signal(); };
    engine_options.api_identity = s.proxmox.token_id.empty() ? s.proxmox.user : s.proxmox.token_id;
    engine_options.retention = {s.keep_journals, std::chrono::days(s.keep_days)};
    install_stop_handlers();
    rt->engine = std::make_unique<reconcile::Engine>(
        reconcile::Dependencies{*rt->api, *rt->guests, *rt->journals, *rt->locks, *rt->results, rt->clock, rt->sleeper,
                                std::move(progress)},
        std::move(engine_options));
  }
  return rt;
}

Result<std::vector<policy::StoragePath>> load_policies(const Args& args, const settings::ControllerSettings& loaded,
                                                       const GlobalOptions& globals,
                                                       std::filesystem::path* policies_root) {
  std::vector<std::filesystem::path> inputs;
  for (const auto& p : args.positional()) inputs.emplace_back(p);
  if (inputs.empty()) {
    auto dir = default_policies_dir(loaded, globals);
    if (!dir) return std::unexpected(dir.error());
    inputs.push_back(*dir);
  }
  if (policies_root != nullptr) *policies_root = inputs.front();
  auto policies = settings::load_paths(inputs);
  if (!policies.ok()) {
    for (const auto& d : policies.diagnostics) report_problem(d);
    return fail(std::to_string(policies.diagnostics.size()) + " problem(s) in the policies", inputs.front().string(),
                "fix them ('pathwarden validate' lists them all)");
  }
  const auto selection = policy::Selection::from(args.values("policy"), args.values("selector"), args.values("node"),
                                                 args.values("host"), args.values("exclude"));
  auto selected = policy::select_policies(std::move(policies.paths), selection);
  if (!selected) return std::unexpected(selected.error().with_where(inputs.front().string()));
  return selected;
}

std::optional<PolicyRevision> policy_revision(const std::filesystem::path& dir) {
  const auto where = std::filesystem::is_directory(dir) ? dir : dir.parent_path();
  ansible::ChildProcessSpec spec;
  spec.argv = {"git", "-C", where.empty() ? "." : where.string(), "rev-parse", "HEAD"};
  spec.timeout = std::chrono::seconds(10);
  spec.environment = {{"LC_ALL", "C"}};  // git's messages as written below, whatever the locale
  auto head = ansible::run_child_process(spec);
  if (head && head->exit_code != 0 && head->err.find("dubious ownership") != std::string::npos) {
    // A repository of another user: git refuses it (CVE-2022-24765), and the report would carry no
    // revision without a word. Say so, with git's own remedy.
    spdlog::warn(
        "the policies' git revision is not recorded: git refuses {} (dubious ownership: it belongs to another "
        "user); trust it with: git config --global --add safe.directory {}",
        escape_controls(where.string()), escape_controls(std::filesystem::absolute(where).string()));
  }
  if (!head || head->exit_code != 0) return std::nullopt;
  PolicyRevision rev;
  rev.commit = head->out.substr(0, head->out.find_first_of("\r\n"));
  spec.argv = {"git", "-C", where.empty() ? "." : where.string(), "status", "--porcelain", "--", "."};
  auto status = ansible::run_child_process(spec);
  rev.dirty = status && status->exit_code == 0 && !status->out.empty();
  return rev;
}

}  // namespace pw::cli
