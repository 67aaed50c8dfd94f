// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// pvesim's own reading of the netN grammar, written from qemu-server's $net_fmt and pve-common's
// parse_property_string/print_property_string -- deliberately not the client's codec, so the two
// check each other.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace pvesim {

struct NetValue {
  std::map<std::string, std::string> fields;  // model, macaddr, bridge, queues, ... (booleans as 1/0)
};

// Parses like Proxmox; on error returns the message Proxmox would put into {"errors":{"netN": ...}}.
struct NetParse {
  std::optional<NetValue> value;
  std::string error;
};
NetParse parse_net(std::string_view key, std::string_view text);

// print_property_string: `model=MAC` (or the bare model) first, then the other keys sorted.
std::string print_net(const NetValue& net);

bool is_net_key(std::string_view key);

// Does a netN change need the device unplugged and plugged again (qemu-server
// vmconfig_update_net)? Such a re-plug also makes a new tap device, whose counters start at 0.
bool needs_replug(const std::string& old_text, const std::string& new_text);

}  // namespace pvesim
