// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The kernel's RPC transports as sunrpc's sysfs shows them (Linux 5.14+:
// /sys/kernel/sunrpc/xprt-switches/switch-M/xprt-N-PROTO/{dstaddr,xprt_info}). One switch per
// NFS client; its transports are the client's connections (nconnect, trunked addresses). A
// transport's dstaddr is writable there: spec.mount.trunking: move-transport writes it
// (guest/transport_move.hpp). Switch and transport names are not stable across reconnects or
// boots, so they are read, never kept.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

// Whether the guest's kernel has the sunrpc sysfs tree: unknown when the facts could not tell
// (an older report, or the agent's file reads, which cannot list a directory).
enum class TransportMoveSupport { unknown, present, absent };

struct SunrpcTransport {
  std::string switch_name;      // "switch-0"
  std::string name;             // "xprt-0-tcp"
  std::string dstaddr;          // "192.0.2.2"; empty when unreadable
  std::optional<bool> main;     // main_xprt=1; unknown for a closed transport
  std::optional<int> dst_port;  // 2049 for NFS; unknown for a closed transport
  std::string proto() const;    // "tcp" of "xprt-0-tcp"
};

struct SunrpcReport {
  TransportMoveSupport support = TransportMoveSupport::unknown;
  std::vector<SunrpcTransport> transports;
};

// The facts script's "sunrpc" section: "absent", or one line per transport:
// "SWITCH XPRT DSTADDR MAIN DSTPORT" ('-' for a value the kernel did not give).
Result<SunrpcReport> parse_sunrpc_section(std::string_view text, std::string_view where);

// The NFS transports (dst_port 2049) of the switch whose main transport points at `address`:
// the connections of the client made with that address. Empty when none or several match.
std::vector<const SunrpcTransport*> client_transports(const std::vector<SunrpcTransport>& all,
                                                      std::string_view address);

}  // namespace pw::guest
