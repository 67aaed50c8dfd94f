// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// TCP connections from `ss -Htni state established '( dport = :2049 )'` (or the same without
// -H / the state filter): which local address each NFS transport really uses.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct TcpConnection {
  std::string state;  // "ESTAB"; empty when ss was filtered to one state and hides the column
  std::string local_address;
  int local_port = 0;
  std::string peer_address;
  int peer_port = 0;
  std::map<std::string, std::string> info;  // key:value items of -i (rto, cwnd, bytes_acked...)
  std::optional<std::uint64_t> bytes_acked, bytes_received, bytes_sent;
};

Result<std::vector<TcpConnection>> parse_ss_tcp(std::string_view text, std::string_view where = "ss -tni");

// The established connections of /proc/net/tcp (ipv6: /proc/net/tcp6), as a file read gives them
// without a program to run (the guest agent's read access): addresses and ports of the
// established ones (state "", as `ss ... state established` gives them), no tcp_info, so no byte
// counters. The addresses are the kernel's 32-bit words in the guest's
// byte order, read here as little-endian (x86-64, arm64 guests).
Result<std::vector<TcpConnection>> parse_proc_net_tcp(std::string_view text, bool ipv6,
                                                      std::string_view where = "/proc/net/tcp");

// The connections to one peer port (2049 for NFS).
std::vector<TcpConnection> connections_to_port(const std::vector<TcpConnection>& all, int port);

}  // namespace pw::guest
