// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Everything pathwarden observes inside one guest, gathered by one script run per guest (the
// facts playbook runs it on all guests at once) plus the fstab read byte for byte.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/addresses.hpp"
#include "guest/connections.hpp"
#include "guest/counters.hpp"
#include "guest/docker_volumes.hpp"
#include "guest/facts_channel.hpp"
#include "guest/fstab.hpp"
#include "guest/interfaces.hpp"
#include "guest/mounts.hpp"
#include "guest/mountstats.hpp"
#include "guest/nfs_servers.hpp"
#include "guest/path_mtu.hpp"
#include "guest/sudo_check.hpp"
#include "guest/sunrpc.hpp"

namespace pw::guest {

struct GuestFacts {
  std::string host;
  std::string boot_id;        // changes on reboot: counters and mounts start over
  std::string fstab_content;  // exact bytes
  std::string fstab_sha256;   // the compare-and-swap token for writing it
  FstabFile fstab;
  std::vector<MountInfo> mounts;
  std::vector<MountStats> mount_stats;
  std::vector<InterfaceCounters> counters;
  std::vector<InterfaceInfo> interfaces;
  std::vector<TcpConnection> nfs_connections;  // established, peer port 2049
  std::vector<InterfaceAddress> addresses;     // ip -o addr: who owns a connection's local address
  std::vector<NfsServer> nfs_servers;
  // sunrpc's transports (guest/sunrpc.hpp): whether the kernel can move one (the trunking
  // remedy), and each NFS client's connections as the kernel keeps them.
  TransportMoveSupport transport_move = TransportMoveSupport::unknown;
  std::vector<SunrpcTransport> sunrpc_transports;
  // Host names asked for (a policy's NAS given by name) → the addresses the guest's own resolver
  // gives, in getaddrinfo's order (mount.nfs mounts the first); a name that did not resolve maps
  // to none. Names not asked for are absent.
  std::map<std::string, std::vector<std::string>> resolved;
  // The path MTU toward each NAS asked (FactsWanted::path_mtu), by the target as asked.
  std::map<std::string, PathMtuProbe> path_mtu;
  // Docker's Compose volumes, when a policy of this guest names one (absent: not asked); an
  // error when Docker did not answer (not installed, daemon down, no permission): such a policy
  // is then unobserved, never drifted.
  std::optional<Result<std::vector<DockerVolume>>> docker;
  // Whether become with sudo works there without asking (guest/sudo_check.hpp); absent when the
  // settings do not become root with sudo.
  std::optional<SudoCheck> sudo;
  FactsChannel channel = FactsChannel::ansible;
  // Read over SSH although the settings prefer the agent (spec.observe.via: auto): why.
  std::string agent_unused;
};

// A host name the facts script may hand to `getent ahosts` as an argument: letters, digits, dots
// and hyphens, not starting with '-' (it would be an option), at most 253 characters.
bool is_name_to_resolve(std::string_view name);

// The facts script's arguments after the fstab: the host names to resolve, then one path-MTU
// probe argument per target (path_mtu_argument). An error names the first that is neither a host
// name nor (for a probe) an address: a policy's mistake, refused whichever way the guest is read.
Result<std::vector<std::string>> facts_arguments(std::span<const std::string> names,
                                                 std::span<const std::string> path_mtu_targets);

// `getent ahosts NAME`'s output: its addresses, each once, in order.
std::vector<std::string> parse_getent_ahosts(std::string_view output);

// The POSIX sh script the facts playbook runs in each guest, framed as guest/script_output.hpp
// says: sections "@@TOKEN NAME", then "@@TOKEN end". Its first argument is the fstab: the
// first section ("fstab") is that file's bytes in base64 (it exits 66 when the file cannot be
// read): one run per guest reads the fstab byte for byte and the rest. Every
// later argument is a host name to resolve as the guest does (`getent ahosts`: getaddrinfo,
// nsswitch, /etc/hosts), each in a section "resolve NAME" (empty: the name did not resolve).
std::string_view guest_report_script();

// Reads the script's output (the fstab from its first section); `host` names the guest.
Result<GuestFacts> parse_guest_report(std::string_view report, const std::string& host);

}  // namespace pw::guest
