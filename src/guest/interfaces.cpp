// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/interfaces.hpp"

#include <cctype>

#include "guest/tokens.hpp"
#include "net/mac_address.hpp"

namespace pw::guest {

std::optional<int> InterfaceInfo::combined_current() const {
  return channels ? channels->current.combined : std::nullopt;
}

std::optional<int> InterfaceInfo::combined_max() const {
  return channels ? channels->maximum.combined : std::nullopt;
}

Result<InterfaceInfo> parse_interface_report(std::string_view name, std::string_view text, std::string_view where) {
  InterfaceInfo info;
  info.name = std::string(name);
  auto ethtool_at = text.find("Channel parameters for ");
  auto keys = text.substr(0, ethtool_at);
  int line_no = 0;
  for (auto line : lines_of(keys)) {
    ++line_no;
    auto f = fields_of(line);
    if (f.empty()) continue;
    auto value = f.size() > 1 ? f[1] : std::string_view{};
    auto number = [&](std::string_view what) -> Result<int> {
      auto n = to_int(value);
      if (!n || *n < 0) {  // ifindex and queue counts are never negative
        return fail(std::string(what) + " of interface " + info.name + " is '" + std::string(value) + "', not a number",
                    std::string(where) + ":" + std::to_string(line_no));
      }
      return *n;
    };
    if (f[0] == "address") {
      info.mac = net::MacAddress(value);
    } else if (f[0] == "lower") {
      info.lowers.emplace_back(value);
    } else if (f[0] == "permaddr") {
      // ethtool prints 00:00:00:00:00:00 for devices without one: that is no identity.
      if (net::MacAddress perm(value); perm.valid() && perm != net::MacAddress("00:00:00:00:00:00")) {
        info.permanent_mac = std::move(perm);
      }
    } else if (f[0] == "ifindex") {
      auto n = number("ifindex");
      if (!n) return std::unexpected(n.error());
      info.ifindex = *n;
    } else if (f[0] == "speed") {
      auto n = to_int64(value);
      if (n && *n >= 0) info.speed_mbps = *n;
    } else if (f[0] == "mtu") {
      if (auto n = to_int(value); n && *n > 0) info.mtu = *n;
    } else if (f[0] == "operstate") {
      info.operstate = std::string(value);
    } else if (f[0] == "rx_queues" || f[0] == "tx_queues") {
      auto n = number(f[0]);
      if (!n) return std::unexpected(n.error());
      (f[0] == "rx_queues" ? info.rx_queues : info.tx_queues) = *n;
    }
  }
  if (ethtool_at != std::string_view::npos) {
    auto channels =
        parse_ethtool_channels(text.substr(ethtool_at), std::string(where) + " (ethtool -l " + info.name + ")");
    if (!channels) return std::unexpected(channels.error());
    info.channels = std::move(*channels);
  }
  return info;
}

const net::MacAddress& InterfaceInfo::identity() const {
  return permanent_mac.valid() ? permanent_mac : mac;
}

const InterfaceInfo* find_nic_interface(const std::vector<InterfaceInfo>& interfaces, const net::MacAddress& nic_mac) {
  if (!nic_mac.valid()) return nullptr;
  for (const auto& i : interfaces) {
    if (!i.upper_device() && i.identity() == nic_mac) return &i;
  }
  return nullptr;
}

const InterfaceInfo* find_interface(const std::vector<InterfaceInfo>& interfaces, std::string_view name) {
  for (const auto& i : interfaces) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

const InterfaceInfo* device_below(const std::vector<InterfaceInfo>& interfaces, std::string_view name) {
  const InterfaceInfo* i = find_interface(interfaces, name);
  // A stack is a few devices high; the bound also stops a (corrupt) cycle.
  for (int depth = 0; i != nullptr && i->upper_device() && depth < 8; ++depth) {
    if (i->lowers.size() != 1) return nullptr;
    i = find_interface(interfaces, i->lowers.front());
  }
  return i != nullptr && !i->upper_device() ? i : nullptr;
}

}  // namespace pw::guest
