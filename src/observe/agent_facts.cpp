// SPDX-License-Identifier: GPL-3.0-or-later
#include "observe/agent_facts.hpp"

#include <algorithm>
#include <optional>

#include "guest/docker_volumes.hpp"

namespace pw::observe {
namespace {

using proxmox::agent::Outcome;

// Exit statuses of the facts command as the guest ends it: coreutils `timeout` (124: ended at
// the limit; 137: killed 5 s later), and the facts script's own 66 (the fstab unreadable).
constexpr int kTimedOut = 124;
constexpr int kKilled = 137;
constexpr int kFstabUnreadable = 66;

AgentMiss miss_of(const proxmox::agent::Problem& p, const proxmox::VmRef& vm, const std::string& identity) {
  return {p.outcome, p.message, hint_for(p, vm, identity), false};
}

std::string first_line(std::string_view text) {
  while (!text.empty() && (text.front() == '\n' || text.front() == ' ')) text.remove_prefix(1);
  return std::string(text.substr(0, text.find('\n')));
}

// The facts script's run, as the guest answered it.
AgentFacts facts_of(const proxmox::AgentResult<proxmox::agent::ExecStatus>& run, const AgentFactsRequest& r,
                    std::chrono::seconds limit, const std::string& identity) {
  if (!run) return std::unexpected(miss_of(run.error(), r.vm, identity));
  if (run->out_truncated) {
    return std::unexpected(AgentMiss{Outcome::agent_error,
                                     "the facts report was longer than the agent passes on (16 MiB per stream)",
                                     "spec.observe.via: auto reads such a guest over SSH", false});
  }
  const int code = run->exit_code.value_or(-1);
  if (code == kTimedOut || code == kKilled) {
    return std::unexpected(AgentMiss{
        Outcome::timeout,
        "the facts script did not finish within " + std::to_string(limit.count()) + " s and was ended in the guest",
        "a hard NFS mount that no longer answers hangs what reads it; "
        "spec.observe.agent_timeout in the settings",
        true});
  }
  if (code != 0) {
    std::string why = first_line(run->err);
    if (code == kFstabUnreadable && why.empty()) why = "the fstab could not be read";
    if (run->signal) why += (why.empty() ? "" : "; ") + std::string("ended by signal ") + std::to_string(*run->signal);
    if (why.empty()) why = "exit status " + std::to_string(code);
    return std::unexpected(AgentMiss{Outcome::agent_error, "the facts script failed: " + why,
                                     "run it over SSH (spec.observe.via: ansible) to see the whole output", true});
  }
  auto facts = guest::parse_guest_report(run->out, r.host);
  if (!facts) {
    return std::unexpected(AgentMiss{Outcome::malformed, facts.error().what, facts.error().hint, true});
  }
  return std::move(*facts);
}

// Constant shell text; every value is an argument after it: the limit, the script, then its own
// arguments. C messages whatever locale the agent was started with, and the guest's `timeout`
// ending the script (and what it started) at the limit.
constexpr std::string_view kUnderTimeout =
    "LC_ALL=C; export LC_ALL; limit=$1; script=$2; shift 2; exec timeout -k 5 \"$limit\" /bin/sh -c \"$script\" sh "
    "\"$@\"";

std::vector<std::string> under_timeout(std::string_view script, std::chrono::seconds limit) {
  return {
      "/bin/sh",          "-c", std::string(kUnderTimeout), "sh", std::to_string(std::max<long long>(1, limit.count())),
      std::string(script)};
}

}  // namespace

std::vector<std::string> facts_command(const std::string& fstab_path, const std::vector<std::string>& names,
                                       std::chrono::seconds limit) {
  auto argv = under_timeout(guest::guest_report_script(), limit);
  argv.push_back(fstab_path);
  argv.insert(argv.end(), names.begin(), names.end());
  return argv;
}

namespace {

std::vector<std::string> docker_volumes_command(std::chrono::seconds limit) {
  return under_timeout(guest::docker_volumes_script(), limit);
}

}  // namespace

std::string hint_for(const proxmox::agent::Problem& problem, const proxmox::VmRef& vm, const std::string& identity) {
  const std::string id = std::to_string(vm.vmid);
  switch (problem.outcome) {
    case Outcome::not_configured:
      return "enable the agent in VM " + id + "'s options ('qm set " + id +
             " --agent 1', in effect after its next start) and install qemu-guest-agent in the guest; or "
             "spec.observe.via: auto, which reads such a guest over SSH";
    case Outcome::not_running:
      return "install and start qemu-guest-agent in the guest ('apt install qemu-guest-agent'); an 'agent: 1' set "
             "while the VM ran takes effect at its next start";
    case Outcome::vm_not_running:
      return "start VM " + id + ", or leave it out of this run";
    case Outcome::command_missing:
      return "the guest's qemu-guest-agent lacks or blocks the command (too old, or --block-rpcs / "
             "--allow-rpcs in its configuration); spec.observe.agent_access: read needs only guest-file-read and "
             "guest-network-get-interfaces";
    case Outcome::frozen:
      return "the guest's file systems are frozen (a backup or snapshot runs): try again after it";
    case Outcome::timeout:
      return "the agent did not answer in time (qemu-server waits 3 s for its ping, 5 s per command)";
    case Outcome::permission: {
      const std::string who = identity.empty() ? std::string("USER@REALM") : identity;
      return "grant " + (problem.privilege.empty() ? std::string("the privilege") : problem.privilege) + " on /vms/" +
             id +
             " to the API identity (exec access: PVE 9 VM.GuestAgent.Unrestricted, PVE 8: VM.Monitor), e.g. pveum "
             "role add PathwardenObserve --privs VM.GuestAgent.Unrestricted, then pveum acl modify /vms/" +
             id + " --roles PathwardenObserve " + (who.find('!') != std::string::npos ? "--tokens '" : "--users '") +
             who + "' (policies/README.md, spec.observe)";
    }
    case Outcome::agent_error:
    case Outcome::api:
    case Outcome::malformed:
      break;
  }
  return "check the VM's guest agent in the Proxmox UI (Summary: IPs)";
}

std::vector<AgentFacts> exec_facts(proxmox::GuestAgent& agent, std::span<const AgentFactsRequest> requests,
                                   const std::string& fstab_path, std::chrono::seconds deadline,
                                   const std::string& identity) {
  // The guest ends the script 5 s before the controller stops waiting for it (and kills it 5 s
  // after that): its own "ended" answer arrives while someone still listens.
  const auto limit = std::max(std::chrono::seconds(1), deadline - std::chrono::seconds(5));
  std::vector<proxmox::AgentExec> runs;
  std::vector<std::size_t> docker_run(requests.size(), SIZE_MAX);
  runs.reserve(requests.size());
  // A name that is not a host name (one that could be an option of getent) is refused here, as
  // the SSH port refuses it: it is the policy's mistake, whichever way the guest is read.
  std::vector<std::optional<AgentMiss>> refused(requests.size());
  std::vector<std::size_t> facts_run(requests.size(), SIZE_MAX);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    auto args = guest::facts_arguments(r.names, r.path_mtu);
    if (!args) {
      refused[i] = AgentMiss{Outcome::api, args.error().what, {}, true};
      continue;
    }
    facts_run[i] = runs.size();
    runs.push_back({r.vm, facts_command(fstab_path, *args, limit), deadline, true});
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].docker_volumes || refused[i]) continue;
    docker_run[i] = runs.size();
    runs.push_back({requests[i].vm, docker_volumes_command(limit), deadline, true});
  }
  auto done = agent.exec(runs);
  std::vector<AgentFacts> out;
  out.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (refused[i]) {
      out.emplace_back(std::unexpected(std::move(*refused[i])));
      continue;
    }
    auto facts = facts_of(done[facts_run[i]], r, limit, identity);
    if (facts && docker_run[i] != SIZE_MAX) {
      const auto& d = done[docker_run[i]];
      if (!d) {
        facts->docker =
            std::unexpected(Error{"Docker's volumes could not be listed through the guest agent: " + d.error().message,
                                  r.host, hint_for(d.error(), r.vm, identity)});
      } else {
        // The agent runs as root: Docker's socket is open to it, so no become hint.
        facts->docker = guest::docker_volumes_answer(d->exit_code.value_or(-1), d->out, d->err, {}, r.host, false);
        if (*facts->docker) guest::take_volume_answers(**facts->docker, facts->mounts);
      }
    }
    out.push_back(std::move(facts));
  }
  return out;
}

}  // namespace pw::observe
