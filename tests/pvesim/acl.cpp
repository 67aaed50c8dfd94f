// SPDX-License-Identifier: GPL-3.0-or-later
#include "acl.hpp"

#include <algorithm>
#include <sstream>

#include "sim_state.hpp"

namespace pvesim {
namespace {

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) out.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

}  // namespace

std::string normalize_acl_path(std::string_view path) {
  std::string out;
  for (const auto& c : components(path)) out += "/" + c;
  return out.empty() ? "/" : out;
}

std::map<std::string, bool> privileges_at(const Acl& acl, std::string_view path) {
  // Levels "/", "/a", "/a/b", ...: the deepest level with an entry that applies there wins.
  const auto parts = components(path);
  std::map<std::string, bool> privileges;
  std::string level = "/";
  for (std::size_t i = 0; i <= parts.size(); ++i) {
    if (i > 0) level = (i == 1 ? "" : level) + "/" + parts[i - 1];
    const bool final = i == parts.size();
    bool applied = false;
    std::map<std::string, bool> here;
    for (const auto& e : acl) {
      if (normalize_acl_path(e.path) != level || !(final || e.propagate)) continue;
      applied = true;
      for (const auto& p : e.privileges) here[p] = here[p] || e.propagate;
    }
    if (applied) privileges = std::move(here);  // "overwrite previous settings"
  }
  return privileges;
}

std::string parse_acl_entry(const std::string& text, AclEntry& out) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || !text.starts_with("/")) return "wants PATH:PRIV,...[:0], PATH starting with '/'";
  out.path = normalize_acl_path(text.substr(0, colon));
  std::string privs = text.substr(colon + 1);
  out.propagate = true;
  if (auto second = privs.find(':'); second != std::string::npos) {
    const std::string flag = privs.substr(second + 1);
    if (flag != "0" && flag != "1") return "the propagate flag after the second ':' is 0 or 1, not '" + flag + "'";
    out.propagate = flag == "1";
    privs.resize(second);
  }
  if (privs.empty()) return "no privileges given";
  std::string error;
  auto parsed = parse_privileges(privs, error);
  if (!parsed) return error;
  out.privileges = *parsed;
  return "";
}

std::vector<std::string> vnet_access_paths(const std::string& zone, const std::string& bridge, const std::string& tag,
                                           const std::string& trunks) {
  const std::string base = "/sdn/zones/" + zone + "/" + bridge;
  std::vector<std::string> out;
  if (!tag.empty()) out.push_back(base + "/" + tag);
  if (!trunks.empty()) {
    // get_tags_from_trunk: split on ';', "a-b" expanded when b > a, else a alone; the keys are
    // then sorted as strings ("sort keys"), which is the order of the checks.
    std::set<std::string> tags;
    std::stringstream ss(trunks);
    for (std::string part; std::getline(ss, part, ';');) {
      const std::size_t dash = part.find('-');
      const std::string first = part.substr(0, dash);
      const std::string last = dash == std::string::npos ? "" : part.substr(dash + 1);
      long a = 0, b = 0;
      try {
        a = std::stol(first);
        b = last.empty() ? 0 : std::stol(last);
      } catch (...) {
        tags.insert(first);
        continue;
      }
      if (b > a) {
        for (long t = a; t <= b; ++t) tags.insert(std::to_string(t));
      } else {
        tags.insert(first);
      }
    }
    for (const auto& t : tags) out.push_back(base + "/" + t);
  }
  if (tag.empty() && trunks.empty()) out.push_back(base);
  return out;
}

}  // namespace pvesim
