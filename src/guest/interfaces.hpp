#pragma once
// What a guest says about one network interface: its MAC (how a Proxmox netN is found inside
// the guest), link speed and queue counts.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/ethtool.hpp"
#include "net/mac_address.hpp"

namespace pw::guest {

struct InterfaceInfo {
  std::string name;
  net::MacAddress mac;                  // sysfs `address`
  std::optional<int> ifindex;           // a re-created netdev (NIC hot-plug) gets a new one
  std::optional<long long> speed_mbps;  // nullopt when the driver reports none (-1 or error)
  std::string operstate;
  int rx_queues = 0;  // sysfs queues/rx-*: what the stack uses now
  int tx_queues = 0;
  std::optional<EthtoolChannels> channels;  // when ethtool -l answered

  std::optional<int> combined_current() const;
  std::optional<int> combined_max() const;
};

// Parses the block the facts script prints per interface: "key value" lines (ifindex, address,
// speed, operstate, rx_queues, tx_queues), then the output of `ethtool -l`, if any.
Result<InterfaceInfo> parse_interface_report(std::string_view name, std::string_view text, std::string_view where);

const InterfaceInfo* find_interface_by_mac(const std::vector<InterfaceInfo>& interfaces, const net::MacAddress& mac);
const InterfaceInfo* find_interface(const std::vector<InterfaceInfo>& interfaces, std::string_view name);

}  // namespace pw::guest
