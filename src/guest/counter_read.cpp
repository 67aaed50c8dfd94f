#include "guest/counter_read.hpp"

#include "guest/tokens.hpp"

namespace pw::guest {
namespace {

constexpr std::string_view kIfindex = "@@pathwarden ifindex";
constexpr std::string_view kConnections = "@@pathwarden nfs_connections";

}  // namespace

Result<CounterRead> parse_counter_read(std::string_view text, std::string_view where) {
  std::string netdev, ifindex, connections;
  std::string* into = &netdev;
  for (auto line : lines_of(text)) {
    if (trim(line) == kIfindex) { into = &ifindex; continue; }
    if (trim(line) == kConnections) { into = &connections; continue; }
    into->append(line).push_back('\n');
  }
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
