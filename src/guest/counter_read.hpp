// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One read of the probe's counters, taken by one constant script so that all of it comes from
// the same instant: the interface byte counters (/proc/net/dev), each interface's ifindex (a
// netdev renamed or re-created between this read and the facts is detected, never misnamed),
// and the NFS connections' own byte counters (`ss -tin`: tcp_info bytes_received/bytes_acked,
// which only the probe's own RPCs move).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/connections.hpp"
#include "guest/counters.hpp"

namespace pw::guest {

struct CounterRead {
  std::vector<InterfaceCounters> counters;
  std::map<std::string, int, std::less<>> ifindex;  // name → ifindex at this read
  std::vector<TcpConnection> nfs_connections;       // established, peer port 2049
};

// One read as the probe script takes it (guest/probe_report.cpp), three sections of its output:
// /proc/net/dev, one "NAME IFINDEX" line per interface, and `ss -Htni`.
Result<CounterRead> parse_counter_read(std::string_view netdev, std::string_view ifindex, std::string_view connections,
                                       std::string_view where);

}  // namespace pw::guest
