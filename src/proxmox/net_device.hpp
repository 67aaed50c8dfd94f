// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The `netN` property string of a Proxmox VM (`virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,queues=8`).
// Pure: parse, change one key, print back with every other key where it was. Grammar and limits
// follow qemu-server's $net_fmt (Network.pm) and pve-common's parse_property_string.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::proxmox {

inline constexpr std::array<std::string_view, 14> kNicModels = {
    "e1000",    "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e",  "i82551", "i82557b",
    "i82559er", "ne2k_isa",      "ne2k_pci",      "pcnet",         "rtl8139", "virtio", "vmxnet3"};

// Keys besides model and macaddr, in Proxmox's print order (alphabetical, after `model=MAC`).
inline constexpr std::array<std::string_view, 9> kNetOptionKeys = {
    "bridge", "firewall", "host-tunnel", "link_down", "mtu", "queues", "rate", "tag", "trunks"};

inline constexpr int kMaxQueues = 64;

struct NetDeviceSpec {
  struct Field {
    std::string key;  // canonical key: "model", "macaddr", "bridge", ...
    std::string value;
    friend bool operator==(const Field&, const Field&) = default;
  };
  // How the model was written: `virtio=MAC` (Proxmox's own form), bare `virtio`, or `model=virtio`.
  enum class ModelStyle { joined_mac, bare, keyed };

  std::vector<Field> fields;  // in written order; with joined_mac the MAC is printed with the model
  ModelStyle model_style = ModelStyle::joined_mac;

  // Rejects unknown or duplicate keys and out-of-range values with a message naming the field.
  static Result<NetDeviceSpec> parse(std::string_view text);

  std::optional<std::string> get(std::string_view key) const;
  // Sets one key after validating the value; a new key goes where Proxmox's print order puts it.
  Status set(std::string_view key, std::string_view value);
  // Removes a key; the model cannot be removed.
  Status erase(std::string_view key);

  std::string model() const { return get("model").value_or(""); }
  std::optional<std::string> mac() const { return get("macaddr"); }
  std::optional<std::string> bridge() const { return get("bridge"); }
  std::optional<int> queues() const;
  // The queues in effect: absent, 0 and 1 all mean one (qemu-server QemuServer.pm
  // print_netdevice_full / print_netdev_full add queues only when > 1, resp. non-zero).
  int effective_queues() const { return std::max(1, queues().value_or(1)); }

  // Prints the fields in their order, so an edit changes only the edited key.
  std::string to_string() const;
  // Prints as Proxmox stores it after a write: model=MAC first, then keys alphabetically,
  // booleans as 0/1. Two specs mean the same device settings when their canonical forms match.
  std::string canonical() const;

  friend bool operator==(const NetDeviceSpec&, const NetDeviceSpec&) = default;
};

// Checks one value against the grammar of `key`; the error names the key and the allowed range.
Status validate_net_value(std::string_view key, std::string_view value);

// "net0".."net31"
bool is_net_key(std::string_view key);
// "net1" → 1; nullopt for anything is_net_key refuses.
std::optional<int> net_index(std::string_view key);

}  // namespace pw::proxmox
