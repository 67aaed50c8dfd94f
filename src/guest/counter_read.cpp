// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/counter_read.hpp"

#include "guest/tokens.hpp"

namespace pw::guest {

Result<CounterRead> parse_counter_read(std::string_view netdev, std::string_view ifindex, std::string_view connections,
                                       std::string_view where) {
  CounterRead out;
  auto counters = parse_proc_net_dev(netdev, std::string(where) + ":/proc/net/dev");
  if (!counters) return std::unexpected(counters.error());
  out.counters = std::move(*counters);
  for (auto line : lines_of(ifindex)) {
    const auto f = fields_of(line);
    const auto n = f.size() == 2 ? to_int(f[1]) : std::nullopt;
    if (!n) return fail("unreadable ifindex line '" + std::string(trim(line)) + "'", std::string(where), {});
    out.ifindex.emplace(std::string(f[0]), *n);
  }
  auto conns = parse_ss_tcp(connections, std::string(where) + ":ss");
  if (!conns) return std::unexpected(conns.error());
  out.nfs_connections = connections_to_port(*conns, 2049);
  return out;
}

}  // namespace pw::guest
