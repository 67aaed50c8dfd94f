// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/types.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "proxmox/net_device.hpp"

namespace pw::proxmox {

std::optional<std::string> VmConfig::get(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> VmConfig::nics() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : entries) {
    if (is_net_key(e.first)) out.push_back(e);
  }
  std::ranges::sort(
      out, [](const auto& a, const auto& b) { return std::stoi(a.first.substr(3)) < std::stoi(b.first.substr(3)); });
  return out;
}

const PendingItem* PendingConfig::find(std::string_view key) const {
  auto it = std::ranges::find_if(items, [&](const PendingItem& i) { return i.key == key; });
  return it == items.end() ? nullptr : &*it;
}

std::vector<std::string> PendingConfig::changed_keys() const {
  std::vector<std::string> out;
  for (const auto& i : items) {
    if (i.has_change()) out.push_back(i.key);
  }
  return out;
}

Result<Upid> Upid::parse(std::string_view text) {
  // UPID:node:PID:PSTART:STARTTIME:type:id:user:  (pve-common UPID.pm)
  auto bad = [&](std::string why) {
    return fail("'" + std::string(text) + "' is not a task id (UPID): " + why, {},
                "a UPID looks like UPID:pve1:0000A1B2:0001C3D4:65F0A1B2:qmstart:101:root@pam:");
  };
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = text.find(':', start);
    if (colon == std::string_view::npos) {
      parts.push_back(text.substr(start));
      break;
    }
    parts.push_back(text.substr(start, colon - start));
    start = colon + 1;
  }
  if (parts.size() != 9 || parts[0] != "UPID" || !parts[8].empty()) return bad("wrong number of fields");
  auto hex = [](std::string_view s, std::size_t min, std::size_t max) {
    return s.size() >= min && s.size() <= max &&
           std::ranges::all_of(s, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
  };
  if (parts[1].empty()) return bad("no node");
  if (!hex(parts[2], 8, 8) || !hex(parts[3], 8, 9) || !hex(parts[4], 8, 8)) return bad("bad hex field");
  if (parts[5].empty() || parts[7].empty()) return bad("no type or user");
  return Upid{std::string(text),     std::string(parts[1]),
              std::string(parts[5]), std::string(parts[6]),
              std::string(parts[7]), static_cast<std::int64_t>(std::stoll(std::string(parts[4]), nullptr, 16))};
}

bool TaskStatus::succeeded() const {
  return !running && (exitstatus == "OK" || exitstatus.starts_with("WARNINGS: "));
}

int TaskStatus::warnings() const {
  if (!exitstatus.starts_with("WARNINGS: ")) return 0;
  int n = 0;
  std::string_view digits = std::string_view(exitstatus).substr(10);
  std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return n;
}

}  // namespace pw::proxmox
