// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/net_device.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <regex>

#include "diagnostics/suggest.hpp"

namespace pw::proxmox {
namespace {

constexpr std::string_view kExample = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,queues=8";

bool is_model(std::string_view s) {
  return std::ranges::find(kNicModels, s) != kNicModels.end();
}

bool is_boolean_key(std::string_view key) {
  return key == "firewall" || key == "link_down" || key == "host-tunnel";
}

// pve-common JSONSchema.pm is_integer: `^[+-]?\d+$` ("+8" and "08" are integers).
std::optional<long long> parse_integer(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || (s.front() == '-' && s.size() == 1)) return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// pve-common's boolean property values; stored by Proxmox as 1 or 0.
std::optional<bool> parse_boolean(std::string_view s) {
  const std::string l = lower(s);
  if (l == "1" || l == "on" || l == "yes" || l == "true") return true;
  if (l == "0" || l == "off" || l == "no" || l == "false") return false;
  return std::nullopt;
}

bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

// `^[a-f0-9][02468ace](:[a-f0-9]{2}){5}$`, case-insensitive: six octets, unicast.
bool is_unicast_mac(std::string_view s) {
  if (s.size() != 17) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i % 3 == 2) {
      if (s[i] != ':') return false;
    } else if (!is_hex(s[i])) {
      return false;
    }
  }
  const char second = static_cast<char>(std::tolower(static_cast<unsigned char>(s[1])));
  return std::string_view("02468ace").find(second) != std::string_view::npos;
}

// pve-common JSONSchema.pm is_number: `^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`
// ("1e3", "+1", ".5" and "1." are numbers).
bool is_number(std::string_view s) {
  static const std::regex number(R"(^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$)");
  return std::regex_match(s.begin(), s.end(), number);
}

// qemu-server Network.pm `$net_fmt` trunks: the pattern `\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`,
// anchored, and nothing more (no 1-4094 range, no start <= end: Proxmox stores "1;5000").
bool is_vlan_list(std::string_view s) {
  static const std::regex trunks(R"(^\d+(-\d+)?(;\d+(-\d+)?)*$)");
  return std::regex_match(s.begin(), s.end(), trunks);
}

bool is_bridge_id(std::string_view s) {
  return !s.empty() && std::ranges::all_of(s, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::vector<std::string_view> all_keys() {
  std::vector<std::string_view> keys{"model", "macaddr"};
  keys.insert(keys.end(), kNetOptionKeys.begin(), kNetOptionKeys.end());
  return keys;
}

bool is_known_key(std::string_view key) {
  return key == "model" || key == "macaddr" || std::ranges::find(kNetOptionKeys, key) != kNetOptionKeys.end();
}

Status range_error(std::string_view key, std::string_view value, long long lo, long long hi) {
  return fail(std::string(key) + "=" + std::string(value) + ": " + std::string(key) + " must be an integer from " +
              std::to_string(lo) + " to " + std::to_string(hi));
}

Status check_integer(std::string_view key, std::string_view value, long long lo, long long hi) {
  auto v = parse_integer(value);
  if (!v || *v < lo || *v > hi) return range_error(key, value, lo, hi);
  return {};
}

// Position of a key in Proxmox's print order, used to place a key that was not there before.
std::size_t print_rank(std::string_view key) {
  if (key == "model") return 0;
  if (key == "macaddr") return 1;
  auto it = std::ranges::find(kNetOptionKeys, key);
  return 2 + static_cast<std::size_t>(it - kNetOptionKeys.begin());
}

std::string canonical_value(std::string_view key, std::string_view value) {
  if (is_boolean_key(key)) {
    if (auto b = parse_boolean(value)) return *b ? "1" : "0";
  }
  return std::string(value);
}

}  // namespace

bool is_net_key(std::string_view key) {
  if (!key.starts_with("net") || key.size() < 4 || key.size() > 5) return false;
  auto n = parse_integer(key.substr(3));
  return n && *n >= 0 && *n <= 31 && !(key.size() == 5 && key[3] == '0');
}

std::optional<int> net_index(std::string_view key) {
  if (!is_net_key(key)) return std::nullopt;
  return static_cast<int>(*parse_integer(key.substr(3)));
}

Status validate_net_value(std::string_view key, std::string_view value) {
  if (key == "model") {
    if (is_model(value)) return {};
    return fail(std::string("model '") + std::string(value) + "' is not a NIC model Proxmox knows" +
                    did_you_mean(value, kNicModels),
                {}, "models: virtio, e1000, e1000e, vmxnet3, rtl8139, ...");
  }
  if (key == "macaddr") {
    if (is_unicast_mac(value)) return {};
    return fail("macaddr '" + std::string(value) + "' is not a unicast MAC address", {},
                "write six hex octets with colons, e.g. BC:24:11:2A:3B:4C; the first octet must be even");
  }
  if (key == "bridge") {
    if (is_bridge_id(value)) return {};
    return fail("bridge '" + std::string(value) + "' is not a bridge name", {},
                "use letters, digits, '-', '_' or '.', e.g. vmbr1");
  }
  if (key == "queues") return check_integer(key, value, 0, kMaxQueues);
  if (key == "tag") return check_integer(key, value, 1, 4094);
  if (key == "mtu") return check_integer(key, value, 1, 65520);
  if (key == "rate") {
    if (is_number(value)) return {};
    return fail("rate=" + std::string(value) + ": rate must be a number >= 0 (MB/s)");
  }
  if (key == "trunks") {
    if (is_vlan_list(value)) return {};
    return fail("trunks=" + std::string(value) + ": trunks must be VLAN ids 1-4094 or ranges separated by ';'", {},
                "e.g. trunks=10;20-30");
  }
  if (is_boolean_key(key)) {
    if (parse_boolean(value)) return {};
    return fail(std::string(key) + "=" + std::string(value) + ": " + std::string(key) + " must be 1 or 0");
  }
  const auto keys = all_keys();
  return fail("unknown key '" + std::string(key) + "'" + did_you_mean(key, keys), {},
              "keys: model, macaddr, bridge, firewall, host-tunnel, link_down, mtu, queues, rate, tag, trunks");
}

Result<NetDeviceSpec> NetDeviceSpec::parse(std::string_view text) {
  NetDeviceSpec spec;
  bool have_model = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, end - start);
    start = end + 1;
    // parse_property_string: `next if $part =~ /^\s*$/` (a part of only whitespace is skipped;
    // other parts are not trimmed).
    if (std::ranges::all_of(part, [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; })) {
      if (end == text.size()) break;
      continue;
    }
    const std::size_t eq = part.find('=');
    std::string key(part.substr(0, eq));
    std::string value = eq == std::string_view::npos ? std::string() : std::string(part.substr(eq + 1));
    auto add = [&](std::string k, std::string v) -> Status {
      if (spec.get(k)) return fail("duplicate key '" + k + "' in '" + std::string(text) + "'");
      if (auto st = validate_net_value(k, v); !st) return st;
      spec.fields.push_back({std::move(k), std::move(v)});
      return {};
    };
    Status st;
    if (eq == std::string_view::npos) {
      // The default key: a bare model name.
      if (!is_model(key)) {
        if (is_known_key(key))
          return fail("'" + key + "' needs a value ('" + key + "=...')", {}, std::string(kExample));
        st = validate_net_value("model", key);
        if (!st) return std::unexpected(st.error());
      }
      spec.model_style = ModelStyle::bare;
      st = add("model", key);
    } else if (is_model(key)) {
      // `virtio=MAC`: the model name is a key alias that carries the MAC.
      spec.model_style = ModelStyle::joined_mac;
      st = add("model", key);
      if (st) st = add("macaddr", value);
    } else if (key == "model") {
      spec.model_style = ModelStyle::keyed;
      st = add("model", value);
    } else {
      st = add(key, value);
    }
    if (!st) return std::unexpected(st.error());
    if (spec.get("model")) have_model = true;
    if (end == text.size()) break;
  }
  if (!have_model) {
    return fail("'" + std::string(text) + "' names no NIC model", {},
                "a netN value starts with the model, e.g. " + std::string(kExample));
  }
  return spec;
}

std::optional<std::string> NetDeviceSpec::get(std::string_view key) const {
  for (const auto& f : fields) {
    if (f.key == key) return f.value;
  }
  return std::nullopt;
}

std::optional<int> NetDeviceSpec::queues() const {
  auto v = get("queues");
  if (!v) return std::nullopt;
  auto n = parse_integer(*v);
  if (!n) return std::nullopt;
  return static_cast<int>(*n);
}

Status NetDeviceSpec::set(std::string_view key, std::string_view value) {
  if (!is_known_key(key)) return validate_net_value(key, value);
  if (auto st = validate_net_value(key, value); !st) return st;
  for (auto& f : fields) {
    if (f.key == key) {
      f.value = std::string(value);
      return {};
    }
  }
  if (key == "macaddr" && model_style == ModelStyle::bare) {
    // Printed as `model=MAC`, so it must sit right after the model to read back the same.
    model_style = ModelStyle::joined_mac;
    auto model = std::ranges::find_if(fields, [](const Field& f) { return f.key == "model"; });
    fields.insert(model == fields.end() ? fields.end() : model + 1, Field{std::string(key), std::string(value)});
    return {};
  }
  // Insert before the first key that Proxmox prints later, so canonical input stays canonical.
  const std::size_t rank = print_rank(key);
  auto pos = std::ranges::find_if(fields, [&](const Field& f) { return print_rank(f.key) > rank; });
  fields.insert(pos, Field{std::string(key), std::string(value)});
  return {};
}

Status NetDeviceSpec::erase(std::string_view key) {
  if (key == "model") return fail("the model of a NIC cannot be removed", {}, "set another model instead");
  std::erase_if(fields, [&](const Field& f) { return f.key == key; });
  // Without a MAC there is nothing to join to the model: it prints (and reads back) bare.
  if (key == "macaddr" && model_style == ModelStyle::joined_mac) model_style = ModelStyle::bare;
  return {};
}

std::string NetDeviceSpec::to_string() const {
  std::string out;
  auto add = [&](std::string_view s) {
    if (!out.empty()) out += ',';
    out += s;
  };
  const auto mac = this->mac();
  for (const auto& f : fields) {
    if (f.key == "model") {
      if (model_style == ModelStyle::joined_mac && mac) {
        add(f.value + "=" + *mac);
      } else if (model_style == ModelStyle::keyed) {
        add("model=" + f.value);
      } else {
        add(f.value);
      }
    } else if (f.key == "macaddr") {
      if (model_style != ModelStyle::joined_mac) add("macaddr=" + f.value);
    } else {
      add(f.key + "=" + f.value);
    }
  }
  return out;
}

std::string NetDeviceSpec::canonical() const {
  std::string out = model();
  if (auto m = mac()) out += "=" + *m;
  for (auto key : kNetOptionKeys) {
    if (auto v = get(key)) out += "," + std::string(key) + "=" + canonical_value(key, *v);
  }
  return out;
}

}  // namespace pw::proxmox
