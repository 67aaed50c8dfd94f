// SPDX-License-Identifier: GPL-3.0-or-later
#include "net_schema.hpp"

#include <algorithm>
#include <array>
#include <regex>
#include <set>

namespace pvesim {
namespace {

const std::set<std::string, std::less<>> kModels = {
    "e1000",    "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e",  "i82551", "i82557b",
    "i82559er", "ne2k_isa",      "ne2k_pci",      "pcnet",         "rtl8139", "virtio", "vmxnet3"};

enum class Type { string_enum_model, mac, bridge, integer, number, boolean, vlan_list };

struct Prop {
  Type type;
  long long min = 0;
  long long max = 0;
};

const std::map<std::string, Prop, std::less<>>& schema() {
  static const std::map<std::string, Prop, std::less<>> s = {
      {"model", {Type::string_enum_model}}, {"macaddr", {Type::mac}},         {"bridge", {Type::bridge}},
      {"queues", {Type::integer, 0, 64}},   {"rate", {Type::number, 0, 0}},   {"tag", {Type::integer, 1, 4094}},
      {"trunks", {Type::vlan_list}},        {"firewall", {Type::boolean}},    {"link_down", {Type::boolean}},
      {"mtu", {Type::integer, 1, 65520}},   {"host-tunnel", {Type::boolean}},
  };
  return s;
}

std::string lower(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Returns "" when valid, else the JSONSchema-style complaint.
std::string check(const std::string& key, std::string& value) {
  const Prop& p = schema().at(key);
  static const std::regex mac_re("^[a-f0-9][02468ace](:[a-f0-9]{2}){5}$", std::regex::icase);
  // pve-common PVE/JSONSchema.pm is_integer / is_number (read at f665029e): a sign is allowed.
  static const std::regex int_re("^[+-]?\\d+$");
  static const std::regex num_re("^[+-]?(\\d+\\.\\d*|\\d*\\.?\\d+)([eE][+-]?\\d+)?$");
  static const std::regex bridge_re("^[-_.\\w\\d]+$");
  static const std::regex vlan_re("^\\d+(-\\d+)?(;\\d+(-\\d+)?)*$");
  switch (p.type) {
    case Type::string_enum_model:
      if (!kModels.contains(value)) return "value '" + value + "' does not have a value in the enumeration";
      return {};
    case Type::mac:
      if (!std::regex_match(value, mac_re)) return "value does not match the regex pattern";
      return {};
    case Type::bridge:
      if (!std::regex_match(value, bridge_re)) return "value does not match the regex pattern";
      return {};
    case Type::integer: {
      if (!std::regex_match(value, int_re)) return "type check ('integer') failed - got '" + value + "'";
      const long long n = std::stoll(value);
      if (n < p.min) return "value must have a minimum value of " + std::to_string(p.min);
      if (n > p.max) return "value must have a maximum value of " + std::to_string(p.max);
      return {};
    }
    case Type::number:
      if (!std::regex_match(value, num_re)) return "type check ('number') failed - got '" + value + "'";
      if (std::stod(value) < 0) return "value must have a minimum value of 0";
      return {};
    case Type::boolean: {
      const std::string l = lower(value);
      if (l == "1" || l == "on" || l == "yes" || l == "true") {
        value = "1";
      } else if (l == "0" || l == "off" || l == "no" || l == "false") {
        value = "0";
      } else {
        return "type check ('boolean') failed - got '" + value + "'";
      }
      return {};
    }
    case Type::vlan_list:
      if (!std::regex_match(value, vlan_re)) return "value does not match the regex pattern";
      return {};
  }
  return {};
}

}  // namespace

bool is_net_key(std::string_view key) {
  static const std::regex re("^net([0-9]|[12][0-9]|3[01])$");
  return std::regex_match(std::string(key), re);
}

NetParse parse_net(std::string_view key, std::string_view text) {
  NetParse out;
  NetValue net;
  std::string errors;
  auto add_error = [&](const std::string& sub, const std::string& msg) {
    errors += std::string(key) + "." + sub + ": " + msg + "\n";
  };
  std::size_t start = 0;
  const std::string s(text);
  while (start <= s.size()) {
    std::size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    start = end + 1;
    if (part.find_first_not_of(" \t") == std::string::npos) {
      if (end == s.size()) break;
      continue;
    }
    std::string k, v;
    if (auto eq = part.find('='); eq != std::string::npos) {
      k = part.substr(0, eq);
      v = part.substr(eq + 1);
    } else {
      k = "model";  // the default key
      v = part;
    }
    if (kModels.contains(k)) {  // key alias: virtio=MAC
      if (net.fields.contains("model"))
        return {std::nullopt, "invalid format - duplicate key in comma-separated list property: model\n"};
      net.fields["model"] = k;
      k = "macaddr";
    }
    if (!schema().contains(k))
      return {std::nullopt, "invalid format - invalid key in comma-separated list property: " + k + "\n"};
    if (net.fields.contains(k))
      return {std::nullopt, "invalid format - duplicate key in comma-separated list property: " + k + "\n"};
    if (auto msg = check(k, v); !msg.empty()) add_error(k, msg);
    net.fields[k] = v;
    if (end == s.size()) break;
  }
  if (!net.fields.contains("model")) add_error("model", "property is missing and it is not optional");
  if (!errors.empty()) return {std::nullopt, "invalid format - format error\n" + errors};
  out.value = std::move(net);
  return out;
}

std::string print_net(const NetValue& net) {
  std::string out;
  auto model = net.fields.find("model");
  auto mac = net.fields.find("macaddr");
  if (model != net.fields.end()) {
    out = model->second;
    if (mac != net.fields.end()) out += "=" + mac->second;
  }
  for (const auto& [k, v] : net.fields) {  // std::map: sorted like Perl's `sort keys`
    if (k == "model" || k == "macaddr") continue;
    if (!out.empty()) out += ",";
    out += k + "=" + v;
  }
  return out;
}

// Does a netN change need the device unplugged and plugged again (vmconfig_update_net)?
bool needs_replug(const std::string& old_text, const std::string& new_text) {
  auto o = parse_net("net", old_text).value;
  auto n = parse_net("net", new_text).value;
  if (!o || !n) return true;
  auto get = [](const NetValue& v, const std::string& k) -> std::optional<std::string> {
    auto it = v.fields.find(k);
    if (it == v.fields.end()) return std::nullopt;
    return it->second;
  };
  auto num_ne = [&](const std::string& k) {
    auto a = get(*o, k), b = get(*n, k);
    if (!a && !b) return false;
    if (!a || !b) return true;
    return std::stod(*a) != std::stod(*b);
  };
  return get(*o, "model") != get(*n, "model") || get(*o, "macaddr") != get(*n, "macaddr") || num_ne("queues") ||
         num_ne("mtu") || !(get(*o, "bridge") && get(*n, "bridge"));
}

}  // namespace pvesim
