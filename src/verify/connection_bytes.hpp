// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The NFS connections' own byte counters around a probe (tcp_info bytes_received for a read,
// bytes_acked for a write, as `ss -tin` prints them), attributed to the guest interface that owns
// each connection's local address. Only RPCs move these counters, so traffic of anything else on
// the same links cannot pass for the probe's bytes. Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/mac_address.hpp"
#include "verify/direction.hpp"
#include "verify/nfs_evidence.hpp"

namespace pw::verify {

struct ConnectionCounters {
  NfsConnection connection;
  std::optional<std::uint64_t> bytes_received;  // absent: the kernel gave no tcp_info (no inet_diag)
  std::optional<std::uint64_t> bytes_acked;
};

struct ConnectionSamples {
  std::vector<ConnectionCounters> before;
  std::vector<ConnectionCounters> after;
};

// One connection to the NAS across the probe.
struct ConnectionFlow {
  NfsConnection connection;
  std::string interface_name;  // owner of the local address; empty when unknown
  net::MacAddress nic;         // identity of the device below that interface; empty when unknown
  bool intended = false;
  bool opened_during_probe = false;  // absent before: all its bytes count
  std::uint64_t bytes = 0;           // in the probe's direction
};

struct ConnectionAnalysis {
  bool counters_available = false;  // some connection showed byte counters before and after
  std::vector<ConnectionFlow> flows;
  std::uint64_t intended_bytes = 0;
  std::uint64_t other_bytes = 0;         // on connections of another known interface
  std::uint64_t unattributed_bytes = 0;  // on connections whose interface is unknown
  std::string busiest_other;             // interface of the other connections' biggest share
  std::vector<std::string> notes;
};

// The same socket: one 4-tuple (addresses compared as addresses, not as text).
bool same_connection(const NfsConnection& a, const NfsConnection& b);
// A connection to the desired server or another address of its NAS.
bool to_nas(const DesiredPath& d, const NfsConnection& c);

// Connections to the desired server or another address of its NAS; local addresses are matched
// against evidence.local_addresses, whose `mac` is the NIC below the owning interface.
ConnectionAnalysis analyze_connections(const ConnectionSamples& samples, const DesiredPath& desired,
                                       const NfsEvidence& evidence, ProbeDirection direction);

}  // namespace pw::verify
