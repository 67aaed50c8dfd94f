// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Moving an NFS client's transports live (spec.mount.trunking: move-transport): the guest script
// that writes sunrpc's dstaddr (Linux 5.14+) for every TCP transport of the client a mount rides,
// with every check the kernel does not make (docs/field-next-upstream.md §1).
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/operations.hpp"

namespace pw::guest {

// The script's exit status when it refused before writing anything: not mounted, not NFSv4.1+,
// mounted from another address than planned, no sunrpc sysfs, no or several clients at `from`.
inline constexpr int kTransportUntouchedExit = 97;

// The transport phase's script (POSIX sh), run as root. Arguments (transport_move_argv): the
// mount point, the same as /proc/mounts writes it, the host the mount names, from, to, and
// "move" or "restore". A move is made only when the mount names `mounted_as` and rides `from`
// (the kernel joined it to that client: one server); it writes `to` to each TCP transport of
// that client pointing at `from`, reads it back, makes one RPC (statfs) and requires the
// transports connected, else moves them back and fails. A restore moves back what points at
// `from` (the forward move's `to`) and is a no-op when the mount is gone or elsewhere.
std::string_view transport_move_script();

// The script's arguments for a request; an error for an address that is not IPv4 or a mount
// point that is not absolute (never sent).
Result<std::vector<std::string>> transport_move_argv(const TransportMove& move);

}  // namespace pw::guest
