// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// src/observe: guests observed through Proxmox's own QEMU guest agent (the API's agent endpoints,
// proxmox/guest_agent.hpp) instead of an SSH session per guest. A GuestPort that reads facts
// through the agent and hands everything else — the fstab changes, channels, probes, the reads
// that belong to a change, waiting for a restarted guest — to the SSH port it wraps: changes stay
// Ansible playbooks over SSH, as the operator reviews them.
//
// Two kinds of access, by the privileges the API identity has (docs/guest-agent.md):
//   exec  agent/exec + exec-status run the very facts script the SSH port runs (same parser, so
//         the same facts field by field): PVE 9 VM.GuestAgent.Unrestricted, PVE 8 VM.Monitor.
//   read  agent/file-read and network-get-interfaces only (PVE 9 VM.GuestAgent.FileRead and
//         .Audit): the kernel's files, without what only a program can tell (NFS connections'
//         byte counters, a NIC's permanent address and channels, name resolution), which the
//         verifier then reports as missing ("address check only"), never guessed.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "guest/port.hpp"
#include "proxmox/guest_agent.hpp"

namespace pw::observe {

// spec.observe.via: who reads the guests' facts.
enum class Via : std::uint8_t {
  ansible,    // SSH, an Ansible play (the default)
  agent,      // the guest agent only: a guest it cannot read is unobserved, with the reason
  automatic,  // "auto": the agent where it answers, else SSH, said per guest
};
std::string_view to_string(Via via);
std::optional<Via> via_from(std::string_view text);
inline constexpr std::string_view kViaNames[] = {"ansible", "agent", "auto"};

// spec.observe.agent_access
enum class Access : std::uint8_t { exec, read };
std::string_view to_string(Access access);
std::optional<Access> access_from(std::string_view text);
inline constexpr std::string_view kAccessNames[] = {"exec", "read"};

struct ObserveOptions {
  Via via = Via::agent;
  Access access = Access::exec;
  std::string fstab_path = "/etc/fstab";
  // The longest one guest's facts may take through the agent; the script is ended in the guest
  // by its own `timeout` a little before (nothing is left running there).
  std::chrono::seconds deadline{60};
  std::string api_identity;  // the token or user, named in a grant command
};

// The GuestPort for spec.observe.via agent or auto: facts through `agent` for every guest whose
// VM the request names (FactsWanted::vm), the rest (and under auto, a guest the agent could not
// read) through `ssh`.
std::unique_ptr<guest::GuestPort> make_observe_port(proxmox::GuestAgent& agent, std::unique_ptr<guest::GuestPort> ssh,
                                                    ObserveOptions options);

}  // namespace pw::observe
