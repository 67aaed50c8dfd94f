// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The QEMU guest agent of many VMs at once, as the Proxmox API serves it
// (/nodes/{node}/qemu/{vmid}/agent/...): what a guest observation asks of it, as a small interface.
// ApiGuestAgent (agent_client.hpp) implements it over the API client; tests have fakes. Every way
// an agent can fail to answer is an agent::Problem with its Outcome, never a guess.
#include <chrono>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "proxmox/agent_json.hpp"
#include "proxmox/types.hpp"

namespace pw::proxmox {

template <class T>
using AgentResult = std::expected<T, agent::Problem>;

// A program to run in a guest and wait for: agent/exec, then agent/exec-status until it exited.
struct AgentExec {
  VmRef vm;
  std::vector<std::string> command;  // argv; command[0] is looked up in the guest's PATH
  // The longest the whole conversation may take; the program goes on in the guest after it (QGA
  // 7.2 has no way to end it), and the result is Outcome::timeout.
  std::chrono::milliseconds deadline{60000};
  // The program only reads (the facts script): its exec may go out on a pooled connection and,
  // in a rare race, run twice. Anything that changes the guest leaves this false.
  bool read_only = false;
};

// A file to read through agent/file-read.
struct AgentFileRead {
  VmRef vm;
  std::string path;
};

class GuestAgent {
 public:
  virtual ~GuestAgent() = default;
  // One result per request, in order; one VM's failure never fails the others.
  virtual std::vector<AgentResult<agent::ExecStatus>> exec(std::span<const AgentExec> runs) = 0;
  virtual std::vector<AgentResult<agent::FileRead>> read_files(std::span<const AgentFileRead> reads) = 0;
  virtual std::vector<AgentResult<std::vector<agent::Interface>>> interfaces(std::span<const VmRef> vms) = 0;
};

}  // namespace pw::proxmox
