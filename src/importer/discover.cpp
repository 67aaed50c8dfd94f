// SPDX-License-Identifier: GPL-3.0-or-later
// Long for one reason: each owner (fstab, Compose, autofs, systemd) finds its server, export and
// options its own way; the rest (VM, NIC, name) is shared.
#include "importer/discover.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "guest/docker_volumes.hpp"
#include "guest/interfaces.hpp"
#include "plan/unowned_mount.hpp"
#include "proxmox/net_device.hpp"

namespace pw::importer {
namespace {

net::MacAddress identity_of(const guest::InterfaceInfo& i) {
  return i.permanent_mac.empty() ? i.mac : i.permanent_mac;
}

std::optional<net::MacAddress> mac_of(const std::string& net_value) {
  auto spec = proxmox::NetDeviceSpec::parse(net_value);
  if (!spec || !spec->mac()) return std::nullopt;
  auto mac = net::MacAddress::parse(*spec->mac());
  if (!mac) return std::nullopt;
  return *mac;
}

// Whether `address` lies in `network`/`prefix` (both IPv4 or both IPv6).
bool in_subnet(const std::string& address, const std::string& network, int prefix) {
  std::array<unsigned char, 16> a{};
  std::array<unsigned char, 16> n{};
  int bits = 0;
  if (inet_pton(AF_INET, address.c_str(), a.data()) == 1 && inet_pton(AF_INET, network.c_str(), n.data()) == 1) {
    bits = 32;
  } else if (inet_pton(AF_INET6, address.c_str(), a.data()) == 1 &&
             inet_pton(AF_INET6, network.c_str(), n.data()) == 1) {
    bits = 128;
  } else {
    return false;
  }
  if (prefix <= 0 || prefix > bits) return false;
  for (int i = 0; i < prefix; ++i) {
    const int byte = i / 8;
    const int mask = 0x80 >> (i % 8);
    if ((a[byte] & mask) != (n[byte] & mask)) return false;
  }
  return true;
}

struct Carrier {
  const guest::InterfaceInfo* nic = nullptr;
  std::string found_by;
};

// The guest interface under the one that carries traffic to `server`: the owner of an NFS
// connection's local address, else (an NFSv3 mount closes an idle connection) the interface
// whose subnet holds the server.
Result<Carrier> carrier_of(const guest::GuestFacts& facts, const std::string& server) {
  std::string interface;
  std::string found_by;
  for (const auto& c : facts.nfs_connections) {
    if (c.peer_address != server) continue;
    for (const auto& a : facts.addresses) {
      if (a.address == c.local_address) {
        interface = a.interface;
        found_by = "its NFS connection from " + c.local_address;
        break;
      }
    }
    if (!interface.empty()) break;
  }
  if (interface.empty()) {
    for (const auto& a : facts.addresses) {
      if (in_subnet(server, a.address, a.prefix_length)) {
        interface = a.interface;
        found_by = "the subnet " + a.address + "/" + std::to_string(a.prefix_length) +
                   " (no NFS connection was open when observed)";
        break;
      }
    }
  }
  if (interface.empty()) {
    return fail("no NFS connection to " + server + " and no interface on its subnet", {},
                "the traffic is routed; add the policy by hand with the NIC the route leaves by");
  }
  const auto* below = guest::device_below(facts.interfaces, interface);
  if (below == nullptr) {
    return fail("the traffic to " + server + " leaves by " + interface +
                    ", which sits on more than one device (a bond) or one the guest did not report",
                {}, "add the policy by hand with the NIC of the bond's active link");
  }
  return Carrier{below, found_by};
}

// The mount in effect at each mount point (stacked: the last), NFS only, in /proc/mounts order.
std::vector<const guest::MountInfo*> nfs_mounts_in_effect(const std::vector<guest::MountInfo>& mounts) {
  std::map<std::string, const guest::MountInfo*> last;
  for (const auto& m : mounts) last[m.mount_point] = &m;
  std::vector<const guest::MountInfo*> out;
  std::set<std::string> seen;
  for (const auto& m : mounts) {
    const auto* top = last[m.mount_point];
    if (top != &m || !top->is_nfs() || !seen.insert(m.mount_point).second) continue;
    out.push_back(top);
  }
  return out;
}

// "host:/export" of an fstab spec or a Docker volume's device: the host (brackets of an IPv6
// address stripped) and the export; nullopt when it is not that shape.
std::optional<std::pair<std::string, std::string>> split_nfs_spec(std::string_view spec) {
  std::string host;
  std::string_view rest;
  if (spec.starts_with('[')) {
    const auto close = spec.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    host = std::string(spec.substr(1, close - 1));
    rest = spec.substr(close + 2);
  } else {
    const auto colon = spec.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = std::string(spec.substr(0, colon));
    rest = spec.substr(colon + 1);
  }
  if (!rest.starts_with('/')) return std::nullopt;
  return std::pair{host, std::string(rest)};
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    if (comma != 0) out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

bool covers(const policy::StoragePath& p, const std::string& host, const ImportedPolicy& candidate) {
  if (p.guest.host != host) return false;
  if (candidate.compose) return p.mount.compose && *p.mount.compose == *candidate.compose;
  return !p.mount.compose && p.mount.path == candidate.path;
}

// The options as the kernel shows them that a policy checks: version, connections, read-only.
std::vector<std::string> checked_options(const guest::MountInfo& m) {
  std::vector<std::string> out;
  if (auto v = m.nfs_version(); !v.empty()) out.push_back("vers=" + v);
  if (m.nconnect() > 1) out.push_back("nconnect=" + std::to_string(m.nconnect()));
  if (m.has_option("ro")) out.emplace_back("ro");
  return out;
}

// Fills owner, server, export, path and options of `out` from how the mount is made; an error
// says why it is left out.
Status describe_owner(const guest::GuestFacts& facts, const guest::MountInfo& m, ImportedPolicy& out) {
  out.path = m.mount_point;
  if (policy::is_docker_volume_path(m.mount_point)) {
    if (!facts.docker) return fail("a Docker volume, and Docker's volumes were not read");
    if (!*facts.docker) return fail("a Docker volume, and Docker did not answer: " + facts.docker->error().to_string());
    const auto& volumes = facts.docker->value();
    const auto v = std::find_if(volumes.begin(), volumes.end(),
                                [&](const guest::DockerVolume& d) { return d.mountpoint == m.mount_point; });
    if (v == volumes.end() || v->compose_project.empty() || v->compose_volume.empty()) {
      return fail("a Docker volume that Compose did not make (no com.docker.compose labels)", {},
                  "pathwarden proves Compose volumes; declare it in the Compose file");
    }
    out.owner = policy::MountOwner::compose;
    out.compose = policy::ComposeVolume{v->compose_project, v->compose_volume};
    out.path.clear();
    const auto* device = v->option("device");
    auto spec = device != nullptr ? split_nfs_spec(*device) : std::nullopt;
    out.export_path = spec ? spec->second : m.export_path();
    out.server = m.server_address();
    if (const auto* o = v->option("o")) {
      for (auto& item : split_commas(*o)) {
        if (item.starts_with("addr=")) {
          out.server = item.substr(5);
        } else {
          out.options.push_back(std::move(item));
        }
      }
    }
    return {};
  }
  if (plan::other_owner_of(facts.mounts, m) == "autofs") {
    out.owner = policy::MountOwner::autofs;
    out.server = m.device_host().empty() ? m.server_address() : m.device_host();
    out.export_path = m.export_path();
    out.options = checked_options(m);
    return {};
  }
  if (auto entry = facts.fstab.entry_for(m.mount_point)) {
    auto spec = split_nfs_spec(entry->spec);
    if (!spec) return fail("its fstab entry's source '" + entry->spec + "' is not HOST:/EXPORT");
    out.owner = policy::MountOwner::fstab;
    out.server = spec->first;
    out.export_path = spec->second;
    for (auto& o : entry->option_list()) {
      if (o != "defaults") out.options.push_back(std::move(o));
    }
    out.fstab_line = entry->spec + " " + entry->file + " " + entry->vfstype + " " + entry->options;
    if (auto owner = facts.fstab.owner_of(m.mount_point)) out.reason = owner->reason;
    return {};
  }
  out.owner = policy::MountOwner::systemd;
  out.server = m.device_host().empty() ? m.server_address() : m.device_host();
  out.export_path = m.export_path();
  out.options = checked_options(m);
  out.notes.push_back("no fstab entry: taken for a systemd unit's mount (" + plan::systemd_mount_unit(m.mount_point) +
                      "); if it was mounted by hand, make it owner: fstab (the first reconcile then writes its "
                      "entry and mounts it anew once)");
  return {};
}

}  // namespace

Result<GuestVm> vm_of_guest(const std::vector<guest::InterfaceInfo>& interfaces,
                            std::span<const proxmox::VmConfig> configs, std::span<const proxmox::GuestSummary> names) {
  std::vector<const proxmox::VmConfig*> matched;
  for (const auto& c : configs) {
    bool match = false;
    for (const auto& [key, value] : c.nics()) {
      const auto mac = mac_of(value);
      if (!mac) continue;
      for (const auto& i : interfaces) {
        if (i.lowers.empty() && identity_of(i) == *mac) match = true;
      }
    }
    if (match) matched.push_back(&c);
  }
  if (matched.empty()) {
    return fail("no interface of the guest has the MAC of a NIC of the " + std::to_string(configs.size()) +
                    " VM(s) read from Proxmox",
                {}, "give --vm VMID of the guest's VM, or check that the host is a VM of this cluster");
  }
  if (matched.size() > 1) {
    std::string which;
    for (const auto* c : matched) which += (which.empty() ? "" : ", ") + c->ref.to_string();
    return fail("the guest's interfaces carry the MACs of NICs of several VMs (" + which + ": cloned MACs?)", {},
                "give --vm VMID to say which VM it is");
  }
  GuestVm out;
  out.vm = matched.front()->ref;
  out.nics = matched.front()->nics();
  for (const auto& n : names) {
    if (n.ref == out.vm) out.vm_name = n.name;
  }
  return out;
}

std::string policy_name(std::string_view host, std::string_view what, const std::vector<std::string>& taken) {
  std::string base;
  bool dash = false;
  for (const char raw : std::string(host) + "-" + std::string(what)) {
    const char c = (raw >= 'A' && raw <= 'Z') ? static_cast<char>(raw - 'A' + 'a') : raw;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_';
    if (ok) {
      base.push_back(c);
      dash = false;
    } else if (!dash && !base.empty()) {
      base.push_back('-');
      dash = true;
    }
  }
  while (!base.empty() && (base.back() == '-' || base.back() == '.' || base.back() == '_')) base.pop_back();
  if (base.empty()) base = "imported";
  auto fit = [](std::string s, std::size_t room) {
    if (s.size() > room) s.resize(room);
    while (!s.empty() && !std::isalnum(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
  };
  std::string name = fit(base, 63);
  for (int n = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++n) {
    const std::string suffix = "-" + std::to_string(n);
    name = fit(base, 63 - suffix.size()) + suffix;
  }
  return name;
}

Discovery discover(const guest::GuestFacts& facts, const GuestVm& vm, const Wanted& wanted,
                   std::span<const policy::StoragePath> existing, std::vector<std::string>& taken) {
  Discovery out;
  for (const auto& p : existing) taken.push_back(p.name);
  for (const auto* m : nfs_mounts_in_effect(facts.mounts)) {
    if (!wanted.mount_paths.empty() &&
        std::find(wanted.mount_paths.begin(), wanted.mount_paths.end(), m->mount_point) == wanted.mount_paths.end())
      continue;
    ImportedPolicy p;
    p.host = facts.host;
    p.vm = vm.vm;
    p.mounted_as = m->device + " " + m->fstype;
    for (const auto& o : m->options)
      p.mounted_as += (&o == &m->options.front() ? " " : ",") + o.name + (o.value ? "=" + *o.value : "");
    auto skip = [&](std::string why) { out.skipped.push_back({facts.host, m->mount_point, std::move(why)}); };
    if (auto st = describe_owner(facts, *m, p); !st) {
      skip(st.error().what + (st.error().hint.empty() ? "" : " (" + st.error().hint + ")"));
      continue;
    }
    const auto holder =
        std::find_if(existing.begin(), existing.end(), [&](const auto& e) { return covers(e, facts.host, p); });
    if (holder != existing.end()) {
      skip("policy '" + holder->name + "' (" + holder->source.to_string() + ") describes it already");
      continue;
    }
    // The mount rides another address's transport (NFSv4.1 trunking): both are the NAS's.
    const std::string transport = m->server_address();
    if (transport != p.server && !m->device_host().empty() && m->device_host() != transport) {
      p.nas_addresses.push_back(transport);
      p.notes.push_back("mounted as " + m->device_host() + " but its traffic rides the transport to " + transport +
                        " (NFSv4.1 trunking: the two are one NAS); the first reconcile plans to re-make it");
    }
    auto carrier = carrier_of(facts, transport);
    if (!carrier) {
      skip(carrier.error().what + " (" + carrier.error().hint + ")");
      continue;
    }
    const auto mac = identity_of(*carrier->nic);
    for (const auto& [key, value] : vm.nics) {
      if (auto nic_mac = mac_of(value); nic_mac && *nic_mac == mac) {
        p.nic_device = key;
        if (auto spec = proxmox::NetDeviceSpec::parse(value)) p.nic_queues = spec->queues();
      }
    }
    if (p.nic_device.empty()) {
      skip("its traffic leaves by " + carrier->nic->name + " (" + mac.str() + "), which is no NIC of " +
           vm.vm.to_string());
      continue;
    }
    p.interface = carrier->nic->name;
    p.interface_found_by = carrier->found_by;
    for (const auto* bit : {"suid", "dev", "exec"}) {
      if (std::find(p.options.begin(), p.options.end(), bit) != p.options.end()) p.allow.emplace_back(bit);
    }
    p.name = policy_name(facts.host, p.compose ? p.compose->project + "-" + p.compose->volume : p.path, taken);
    taken.push_back(p.name);
    out.policies.push_back(std::move(p));
  }
  return out;
}

}  // namespace pw::importer
