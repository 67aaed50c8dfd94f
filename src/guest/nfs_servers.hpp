// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// /proc/fs/nfsfs/servers: one line per NFS client the kernel keeps (per server and version).
// A mount through a second address of a trunked server adds no line: the use count grows.
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct NfsServer {
  std::string version;  // "v3", "v4"
  std::string address;  // dotted IPv4 decoded from the hex column; empty if not IPv4
  std::string address_hex;
  int port = 0;  // the hex port column decoded (801 → 2049)
  int use_count = 0;
  std::string hostname;  // the name or address the client was created for
};

Result<std::vector<NfsServer>> parse_nfs_servers(std::string_view text,
                                                 std::string_view where = "/proc/fs/nfsfs/servers");

}  // namespace pw::guest
