// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A guest's facts read through the QEMU guest agent (observe_port.hpp says when and why): the
// requests for many guests at once, and each guest's facts or the reason there are none.
#include <chrono>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "guest/facts.hpp"
#include "proxmox/guest_agent.hpp"

namespace pw::observe {

struct AgentFactsRequest {
  std::string host;
  proxmox::VmRef vm;
  std::vector<std::string> names;     // host names the guest resolves (FactsWanted::names)
  std::vector<std::string> path_mtu;  // NAS targets to probe the path MTU to (exec access only)
  bool docker_volumes = false;
};

// Why a guest's facts did not come through the agent.
struct AgentMiss {
  proxmox::agent::Outcome outcome = proxmox::agent::Outcome::api;
  std::string message;
  std::string hint;
  // The agent ran the facts script and the guest's answer is the failure (an unreadable fstab, a
  // report that does not parse): SSH would get the same answer, so `auto` does not fall back.
  bool guest_said = false;
};
using AgentFacts = std::expected<guest::GuestFacts, AgentMiss>;

// The argv the agent runs for the facts report: /bin/sh with a constant wrapper that sets C
// messages and runs the SSH port's script (guest/facts.hpp) under the guest's own `timeout`,
// ending it (and what it started) at `limit`: QGA 7.2 cannot end a program it started. The
// limit, the script and its arguments are argv words after the wrapper, never shell text.
std::vector<std::string> facts_command(const std::string& fstab_path, const std::vector<std::string>& names,
                                       std::chrono::seconds limit);

// What to do about an agent that did not answer, per outcome: the VM option, the package, the
// privilege (PVE 9's and PVE 8's name, with the pveum command), the access mode.
// `identity`: the API token or user, for the grant command.
std::string hint_for(const proxmox::agent::Problem& problem, const proxmox::VmRef& vm, const std::string& identity);

// exec access: one agent/exec of the facts script per guest (and of the Docker volumes script
// where asked), polled to its end. One result per request, in order.
std::vector<AgentFacts> exec_facts(proxmox::GuestAgent& agent, std::span<const AgentFactsRequest> requests,
                                   const std::string& fstab_path, std::chrono::seconds deadline,
                                   const std::string& identity);

// read access: agent/network-get-interfaces, then agent/file-read of the kernel's files, for all
// guests at once (two batches). What only a program can tell stays unknown (read_facts.cpp).
std::vector<AgentFacts> read_facts(proxmox::GuestAgent& agent, std::span<const AgentFactsRequest> requests,
                                   const std::string& fstab_path, const std::string& identity);

}  // namespace pw::observe
