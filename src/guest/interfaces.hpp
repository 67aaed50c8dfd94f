// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a guest says about one network interface: its addresses (how a Proxmox netN is found
// inside the guest), link speed and queue counts.
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
  net::MacAddress mac;  // sysfs `address`: what it uses now, which anyone can set
  // `ethtool -P`: the address the device was made with (for virtio-net, the netN's macaddr as
  // QEMU gave it). A bond gives its slaves its own MAC, netplan's `macaddress:` or `ip link set
  // address` relabel an interface; this stays. Empty when the driver has none (veth, bridge, lo).
  net::MacAddress permanent_mac;
  // sysfs lower_*: the devices a VLAN, bond or bridge sits on. Such an upper device wears its
  // lower device's MAC and counts its bytes again; it is never a Proxmox NIC itself.
  std::vector<std::string> lowers;
  // An upper device whose lower devices could not be read (the guest agent's read access: a
  // bridge's ports are a directory): never a Proxmox NIC, never followed down.
  bool lowers_unknown = false;
  std::optional<int> ifindex;           // a re-created netdev (NIC hot-plug) gets a new one
  std::optional<long long> speed_mbps;  // nullopt when the driver reports none (-1 or error)
  std::string operstate;
  std::optional<int> mtu;  // sysfs `mtu`: what the interface sends now (nullopt: not read)
  int rx_queues = 0;       // sysfs queues/rx-*: what the stack uses now
  int tx_queues = 0;
  // Read without a program (the guest agent's read access): the queue directories and ethtool's
  // channels are unknown, not zero.
  bool queues_unknown = false;
  std::optional<EthtoolChannels> channels;  // when ethtool -l answered

  // Who this interface is: its permanent address when the driver has one, else its MAC.
  const net::MacAddress& identity() const;
  bool upper_device() const { return !lowers.empty() || lowers_unknown; }

  std::optional<int> combined_current() const;
  std::optional<int> combined_max() const;
};

// Parses the block the facts script prints per interface: "key value" lines (ifindex, address,
// speed, operstate, rx_queues, tx_queues), then the output of `ethtool -l`, if any.
Result<InterfaceInfo> parse_interface_report(std::string_view name, std::string_view text, std::string_view where);

// The interface of a Proxmox NIC: the one whose identity (permanent address, else MAC) is the
// NIC's macaddr, never an upper device. An interface that only wears that MAC now (a bond slave,
// a relabelled or swapped interface) is not it.
const InterfaceInfo* find_nic_interface(const std::vector<InterfaceInfo>& interfaces, const net::MacAddress& nic_mac);
const InterfaceInfo* find_interface(const std::vector<InterfaceInfo>& interfaces, std::string_view name);

// The device under an interface: itself when it is not stacked, else its lower device followed
// down (a VLAN on a bridge on link2 → link2). Null when the way down forks (a bond of two NICs:
// its traffic may take either) or leads to a device the guest did not report.
const InterfaceInfo* device_below(const std::vector<InterfaceInfo>& interfaces, std::string_view name);

}  // namespace pw::guest
