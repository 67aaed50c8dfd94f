// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// GuestAgent over the Proxmox API client: every VM's conversation runs at once, bounded twice —
// by the client's in-flight limit, and per node by `per_node` calls at a time, because each agent
// call holds one of pvedaemon's workers on the VM's node for its whole run (3 by default:
// pve-manager PVE/Service/pvedaemon.pm max_workers; docs/guest-agent-upstream.md §5), and a dead
// agent holds it for qemu-server's 3 s ping. More at once would only queue there and starve the
// node's other API users.
#include "proxmox/client.hpp"
#include "proxmox/guest_agent.hpp"

namespace pw::proxmox {

struct GuestAgentOptions {
  int per_node = 3;
  // exec-status is asked again after these waits, the last one repeating: a facts script is done
  // in tens of milliseconds, and a slow one costs a request per half second, not a busy loop.
  std::vector<std::chrono::milliseconds> poll_waits{std::chrono::milliseconds(0),   std::chrono::milliseconds(25),
                                                    std::chrono::milliseconds(50),  std::chrono::milliseconds(100),
                                                    std::chrono::milliseconds(200), std::chrono::milliseconds(500)};
};

class ApiGuestAgent final : public GuestAgent {
 public:
  ApiGuestAgent(Client& client, GuestAgentOptions options = {});
  ~ApiGuestAgent() override;
  ApiGuestAgent(const ApiGuestAgent&) = delete;
  ApiGuestAgent& operator=(const ApiGuestAgent&) = delete;

  std::vector<AgentResult<agent::ExecStatus>> exec(std::span<const AgentExec> runs) override;
  std::vector<AgentResult<agent::FileRead>> read_files(std::span<const AgentFileRead> reads) override;
  std::vector<AgentResult<std::vector<agent::Interface>>> interfaces(std::span<const VmRef> vms) override;

 private:
  class NodeGate;
  template <class T, class Request, class Target, class Parse>
  std::vector<AgentResult<T>> each_get(std::span<const Request> requests, std::string_view command, Target target,
                                       Parse parse);
  Client& client_;
  GuestAgentOptions options_;
  std::unique_ptr<NodeGate> gate_;
};

}  // namespace pw::proxmox
