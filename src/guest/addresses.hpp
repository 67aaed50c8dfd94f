#pragma once
// The guest's own addresses from `ip -o addr show`: which interface owns the local address an NFS
// connection leaves from (the connection → interface signal of the verifier).
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct InterfaceAddress {
  std::string interface;  // "link2", "link2.10" (ip prints "link2.10@link2": the part before '@')
  std::string address;    // "198.51.100.10", "fd00::10" (no prefix length)
  int prefix_length = 0;
  friend bool operator==(const InterfaceAddress&, const InterfaceAddress&) = default;
};

// One line per address: "2: link1    inet 192.0.2.10/24 brd ... scope global link1\ ...".
// Lines that are not inet/inet6 address lines are skipped; a malformed address line is an error.
Result<std::vector<InterfaceAddress>> parse_ip_addr(std::string_view text, std::string_view where = "ip -o addr");

}  // namespace pw::guest
