// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The traffic of a converged mount since the previous run: what the counters a run reads anyway
// (the NFS connections' tcp_info bytes in the guest's facts, the VM's tap counters from one read
// per node) moved between two runs. Stored with each result as a TrafficMark and differenced by
// the next run. Only like is compared with like: a connection by its 4-tuple, a tap by the QEMU
// process and the netN line it was made with; a new connection, a counter that went down, a
// restarted or migrated VM or a re-plugged NIC give "no comparison", never traffic. Pure.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "verify/connection_bytes.hpp"
#include "verify/host_taps.hpp"
#include "verify/nfs_evidence.hpp"
#include "verify/settings.hpp"

namespace pw::verify {

struct TrafficMark {
  std::string taken_at;                         // RFC 3339 UTC, the run that read it
  std::vector<ConnectionCounters> connections;  // the guest's NFS connections to the policy's NAS
  // The VM's taps, with what makes them the same taps next time. taps_unavailable: why there are
  // none (the API answered no "nics", the plan names no Proxmox NIC, the read failed).
  std::string node;
  std::optional<std::int64_t> pid;       // the QEMU process; a restart or migration makes another
  std::map<int, TapBytes> taps;          // by N of netN
  std::map<int, std::string> nic_lines;  // netN as configured: another line, another (re-plugged) tap
  std::string taps_unavailable;
};

enum class TrafficFinding {
  carried,        // the NFS bytes since the last run went over the intended NIC (as far as the counters tell)
  elsewhere,      // they went over another NIC: the path no longer holds
  idle,           // no NFS traffic worth the name since the last run
  no_comparison,  // nothing comparable: no previous mark, new connections, counters without tcp_info
};

struct TrafficSince {
  TrafficFinding finding = TrafficFinding::no_comparison;
  std::string text;                   // what the verdict rests on, one sentence an operator reads
  std::uint64_t nfs_bytes = 0;        // on connections seen by both runs, both directions
  std::optional<int> carrier;         // elsewhere, as the host saw it: the netN that carried them
  std::string carrier_interface;      // elsewhere, as the guest saw it: the interface of the connections
  bool asymmetric = false;            // elsewhere one way only (replies in on one NIC, requests out on another)
  std::vector<std::string> evidence;  // elsewhere: one observed fact per line, for the diagnosis
};

// Traffic below this, on all of the mount's connections together, is the NFS client's own chatter
// (lease renewals, attribute checks): "no traffic", and nothing to weigh.
inline constexpr std::uint64_t kIdleBytes = 1ull << 20;

// `evidence` is the guest's now (its addresses → interfaces → NICs); `intended_net` is N of the
// intended netN (-1: the plan names none, guest-side only). The text names `before.taken_at` as
// "the last run".
TrafficSince traffic_since(const TrafficMark& before, const TrafficMark& now, const DesiredPath& desired,
                           const NfsEvidence& evidence, int intended_net, const VerifySettings& s);

}  // namespace pw::verify
