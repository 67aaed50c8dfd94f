// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The guest's own addresses from `ip -j addr show` (iproute2's JSON): which interface owns the
// local address an NFS connection leaves from (the connection → interface signal of the
// verifier), and the subnets `pathwarden import` finds an idle mount's NIC by.
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct InterfaceAddress {
  std::string interface;  // "link2", "link2.10" (iproute2's "ifname": a VLAN by its own name)
  std::string address;    // "198.51.100.10", "fd00::10" (no prefix length)
  int prefix_length = 0;
  friend bool operator==(const InterfaceAddress&, const InterfaceAddress&) = default;
};

// The JSON array `ip -j addr show` prints: per interface its "ifname" and "addr_info", each with
// "family" (inet, inet6; others skipped), "local" and "prefixlen". An empty object (which some
// iproute2 versions print for an interface without addresses) is skipped; anything else that is
// not that shape is an error naming where.
Result<std::vector<InterfaceAddress>> parse_ip_addr(std::string_view json, std::string_view where = "ip -j addr");

}  // namespace pw::guest
