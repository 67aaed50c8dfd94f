// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The QEMU guest agent as the Proxmox API serves it (/nodes/{node}/qemu/{vmid}/agent/...):
// the answers of the endpoints a guest observation needs, read into typed values, and every way
// the agent can fail to answer as a named outcome, never a guess. Pure functions over the
// response text, like api_json.hpp. What each shape and message is, with its upstream source:
// docs/guest-agent-upstream.md (qemu-server PVE/API2/Qemu/Agent.pm, PVE/QemuServer/Agent.pm,
// Debian bookworm's qemu-guest-agent 7.2 schema).
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "proxmox/api_error.hpp"
#include "proxmox/types.hpp"

namespace pw::proxmox::agent {

// Why an agent call gave no answer to use.
enum class Outcome {
  not_configured,   // 500 "No QEMU guest agent configured": the VM config has no `agent` key
  not_running,      // 500 "QEMU guest agent is not running": agent: 0, not installed, service down,
                    // or enabled while the VM ran (pending until a restart)
  vm_not_running,   // 500 "VM 101 is not running"
  command_missing,  // QGA CommandNotFound: an agent without that command (older than the command)
  frozen,           // QGA "Command ... has been disabled: the agent is in frozen state" (a backup)
  timeout,          // "... command 'guest-...' failed - got timeout", or HTTP 596 (pveproxy's 30 s)
  agent_error,      // 500 "Agent error: ...": a file that cannot be opened, an unknown pid, ...
  permission,       // 403: the privilege ApiError::missing_privilege names is missing
  api,              // any other failure of the API call (transport, TLS, auth, ...)
  malformed,        // a 200 answer that is not the shape the agent endpoints return
};
std::string_view to_string(Outcome outcome);

struct Problem {
  Outcome outcome = Outcome::api;
  std::string message;    // the agent's or Proxmox's words
  std::string privilege;  // permission: the privilege(s) Proxmox asked for ("VM.GuestAgent.Audit|...")
};

// The outcome of a failed agent call, from the API's error (status, reason, message).
Problem classify(const ApiError& error);

// One interface as guest-network-get-interfaces lists it (QGA 7.2 schema: name, optional
// hardware-address, ip-addresses, statistics since QEMU 2.11, Linux only).
struct Address {
  std::string address;
  bool ipv6 = false;
  int prefix = 0;
};
struct Interface {
  std::string name;
  std::string mac;  // "" when the agent gave none (lo has 00:00:00:00:00:00)
  std::vector<Address> addresses;
  std::optional<std::uint64_t> rx_bytes;  // statistics, when the agent reports them
  std::optional<std::uint64_t> tx_bytes;
};

// A file's bytes as agent/file-read returns them: up to 16 MiB (qemu-server $MAX_READ_SIZE); a
// longer file is not an error there but `truncated: 1`, which is kept here for the caller to name.
struct FileRead {
  std::string content;
  std::uint64_t bytes_read = 0;
  bool truncated = false;
};

// guest-exec-status as qemu-server returns it: output decoded from base64, booleans as 0/1, the
// output only once the process has exited (the agent then forgets the pid).
struct ExecStatus {
  bool exited = false;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string out;
  std::string err;
  bool out_truncated = false;  // past QGA's 16 MiB per stream
  bool err_truncated = false;
};

// The path under /api2/json of an agent endpoint of `vm`: "/nodes/pve1/qemu/101/agent/file-read".
std::string endpoint(const VmRef& vm, std::string_view command);

// GET agent/network-get-interfaces: {"data":{"result":[...]}}; a QGA error inside a 200 answer
// ({"data":{"result":{"error":{class,desc}}}}, the generic endpoints pass it through) is a Problem.
std::expected<std::vector<Interface>, Problem> parse_interfaces(std::string_view body);
// GET agent/file-read: {"data":{"content":...,"bytes-read":N[,"truncated":1]}}.
std::expected<FileRead, Problem> parse_file_read(std::string_view body);
// POST agent/exec: {"data":{"pid":N}}.
std::expected<long, Problem> parse_exec(std::string_view body);
// GET agent/exec-status: {"data":{"exited":0|1,...}}.
std::expected<ExecStatus, Problem> parse_exec_status(std::string_view body);

}  // namespace pw::proxmox::agent
