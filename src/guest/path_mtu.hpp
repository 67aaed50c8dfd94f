// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The path MTU to a NAS as the guest measures it: facts.sh's "pmtu TARGET" section, a
// don't-fragment ping (`ping -M do`, iputils) of the route's interface MTU toward the NAS, and of
// 1500 when that gets no answer. A jumbo interface behind a hop that is not (a Proxmox bridge or a
// switch at 1500) drops every full-size frame without a word: NFS mounts, then stalls on the first
// large read or write. docs/field-next-upstream.md §4.2.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

// One `ping -M do -s SIZE` toward the NAS.
struct PingAttempt {
  int payload = 0;                  // -s: the IP packet is payload + 28 (IPv4) or + 48 (IPv6)
  int exit_status = 0;              // ping's
  int received = 0;                 // replies
  std::optional<int> reported_mtu;  // "Frag needed ... (mtu = N)" from a hop, or a local "mtu=N"
};

struct PathMtuProbe {
  enum class Outcome {
    probed,      // pings sent: see attempts
    unresolved,  // the target did not resolve in the guest
    no_route,    // no route to the address
    not_jumbo,   // the route's interface MTU is at most 1500: nothing sent (black holes hide above it)
    no_ping,     // ping is not installed in the guest
  };
  Outcome outcome = Outcome::probed;
  std::string address;                // what the target resolved to
  std::string interface;              // the route's device
  int mtu = 0;                        // that device's MTU
  std::vector<PingAttempt> attempts;  // at the interface's MTU, then at 1500 when the first got nothing
};

// The section's body: "unresolved" | "noroute ADDR" | "route ADDR DEV MTU" then "nojumbo",
// "noping" or one "ping PAYLOAD EXIT RECEIVED MTU|-" line per attempt.
Result<PathMtuProbe> parse_path_mtu(std::string_view body, std::string_view where);

// What a probe says about the path.
enum class PathMtuVerdict {
  unknown,      // not measured (not asked, no ping, no route, the agent's read access)
  fits,         // a full-size frame crossed (or the interface is not jumbo)
  smaller_hop,  // a hop said it carries less (ICMP "fragmentation needed"): TCP adapts, at a cost
  black_hole,   // full-size frames vanish while 1500-byte ones cross: large NFS transfers stall
  unanswered,   // nothing answered even at 1500 (ICMP filtered, or the NAS down): not an MTU finding
};

struct PathMtuFinding {
  PathMtuVerdict verdict = PathMtuVerdict::unknown;
  int mtu = 0;                 // the interface's (probed) MTU
  std::optional<int> hop_mtu;  // smaller_hop: what the hop said
};

PathMtuFinding classify_path_mtu(const PathMtuProbe& probe);

// The facts script's argument asking for a probe of TARGET (a host name to resolve, or an IP
// address), and whether TARGET may be one: a host name as is_name_to_resolve says, or an IPv4 or
// IPv6 literal. Never starts with '-'.
std::string path_mtu_argument(std::string_view target);
bool is_path_mtu_target(std::string_view target);
inline constexpr std::string_view kPathMtuArgumentPrefix = "pmtu=";

}  // namespace pw::guest
