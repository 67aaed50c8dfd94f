// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// /proc/self/mountstats: per NFS mount, the RPC transports (one `xprt:` line each; several with
// nconnect or trunking) and the byte counters of the mount.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct RpcTransport {
  std::string protocol;  // tcp, udp, rdma
  // Local port of the connection; 0 when the kernel does not show it (NFSv4 on 6.1 prints 0).
  std::optional<int> source_port;
  std::uint64_t sends = 0;
  std::uint64_t receives = 0;
  std::vector<std::uint64_t> fields;  // every number after the protocol, as printed
};

// The `bytes:` line: what the application read/wrote and what went over the wire.
struct NfsByteCounters {
  std::uint64_t normal_read = 0, normal_write = 0, direct_read = 0, direct_write = 0;
  std::uint64_t server_read = 0, server_write = 0, read_pages = 0, write_pages = 0;
};

struct MountStats {
  std::string device;
  std::string mount_point;
  std::string fstype;
  std::string statvers;     // empty for non-NFS mounts
  std::string options;      // the `opts:` line
  std::string rpc_program;  // "100003/4" from `p/v:`
  std::optional<std::uint64_t> age_seconds;
  std::optional<NfsByteCounters> bytes;
  std::vector<RpcTransport> transports;

  bool is_nfs() const { return fstype == "nfs" || fstype == "nfs4"; }
};

Result<std::vector<MountStats>> parse_mountstats(std::string_view text,
                                                 std::string_view where = "/proc/self/mountstats");

// Only the NFS mounts, the ones with transports to look at.
std::vector<MountStats> nfs_only(std::vector<MountStats> stats);

}  // namespace pw::guest
