// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/names.hpp"

#include <algorithm>

#include "policy/yaml_schema.hpp"

namespace pw::plan {

std::vector<std::string> names_to_resolve(const policy::StoragePath& p) {
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    if (!policy::schema::is_ip_address(s) && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  add(p.mount.server);
  for (const auto& a : p.mount.nas_addresses) add(a);
  return out;
}

Result<policy::StoragePath> with_resolved_names(const policy::StoragePath& p, const guest::GuestFacts& facts) {
  auto lookup = [&](const std::string& name, const char* field) -> Result<std::vector<std::string>> {
    if (policy::schema::is_ip_address(name)) return std::vector<std::string>{name};
    auto it = facts.resolved.find(name);
    if (it == facts.resolved.end()) {
      return fail("the guest was not asked to resolve " + name, p.guest.host, "gather the facts again");
    }
    if (it->second.empty()) {
      return fail(std::string(field) + " " + name + " does not resolve in guest " + p.guest.host + " (getent ahosts " +
                      name + " gives nothing), so mount.nfs there cannot mount it",
                  p.position_of(std::string("spec.mount.") + field).to_string(),
                  "add the name to the guest's DNS or /etc/hosts, or give the address");
    }
    return it->second;
  };
  policy::StoragePath out = p;
  auto server = lookup(p.mount.server, "server");
  if (!server) return std::unexpected(server.error());
  out.mount.server = server->front();
  out.mount.nas_addresses.clear();
  for (const auto& a : p.mount.nas_addresses) {
    auto addrs = lookup(a, "nas_addresses");
    if (!addrs) return std::unexpected(addrs.error());
    for (const auto& x : *addrs) {
      if (x != out.mount.server && std::find(out.mount.nas_addresses.begin(), out.mount.nas_addresses.end(), x) ==
                                       out.mount.nas_addresses.end()) {
        out.mount.nas_addresses.push_back(x);
      }
    }
  }
  // The server's own other addresses are the same NAS too: mount.nfs could have picked any.
  for (std::size_t i = 1; i < server->size(); ++i) {
    if (std::find(out.mount.nas_addresses.begin(), out.mount.nas_addresses.end(), (*server)[i]) ==
        out.mount.nas_addresses.end()) {
      out.mount.nas_addresses.push_back((*server)[i]);
    }
  }
  return out;
}

}  // namespace pw::plan
