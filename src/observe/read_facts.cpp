// SPDX-License-Identifier: GPL-3.0-or-later
// Agent read access (spec.observe.agent_access: read): a guest's facts from agent/file-read and
// agent/network-get-interfaces alone — the privileges PVE 9 gives an auditor (VM.GuestAgent.Audit,
// .FileRead), no program run in the guest. The kernel's own files give the fstab, mounts,
// mountstats, interface counters, NFS clients and TCP connections; what only a program can tell
// stays unknown, never guessed: the connections' byte counters (tcp_info: the passive proof is
// then "address check only"), a NIC's permanent MAC and channels (ethtool), the ports of a
// bridge, and names resolved by the guest (a policy naming its NAS by host name needs exec).
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "guest/connections.hpp"
#include "guest/counters.hpp"
#include "guest/mounts.hpp"
#include "guest/mountstats.hpp"
#include "guest/nfs_servers.hpp"
#include "guest/sha256.hpp"
#include "guest/tokens.hpp"
#include "observe/agent_facts.hpp"

namespace pw::observe {
namespace {

using proxmox::agent::Outcome;
using proxmox::agent::Problem;

// The files every guest is read for, in this order; the last ones may be absent.
enum class File : std::uint8_t { fstab, boot_id, mounts, mountstats, netdev, nfs_servers, tcp, tcp6, vlans, count };
constexpr std::string_view kPaths[] = {"",
                                       "/proc/sys/kernel/random/boot_id",
                                       "/proc/mounts",
                                       "/proc/self/mountstats",
                                       "/proc/net/dev",
                                       "/proc/fs/nfsfs/servers",
                                       "/proc/net/tcp",
                                       "/proc/net/tcp6",
                                       "/proc/net/vlan/config"};
// Per interface: its uevent (IFINDEX, DEVTYPE), operstate, speed and MTU.
enum class IfFile : std::uint8_t { uevent, operstate, speed, mtu, count };
constexpr std::string_view kIfFiles[] = {"uevent", "operstate", "speed", "mtu"};

// What a file that is not there means: the kernel has no NFS client loaded, no IPv6, no VLAN.
bool may_be_absent(File f) {
  return f == File::nfs_servers || f == File::tcp6 || f == File::vlans;
}

bool not_there(const Problem& p) {
  return p.outcome == Outcome::agent_error && p.message.find("No such file or directory") != std::string::npos;
}

// A guest's reads, in order: the files, then per interface its three.
struct Reads {
  std::size_t first = 0;     // index of its fstab read in the batch
  std::size_t first_if = 0;  // index of its first interface read
  std::vector<std::string> ifs;
};

// "KEY=value" of a sysfs uevent.
std::string uevent_value(std::string_view text, std::string_view key) {
  for (auto line : guest::lines_of(text)) {
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == '=') {
      return std::string(line.substr(key.size() + 1));
    }
  }
  return {};
}

// /proc/net/vlan/config: "link2.10  | 10  | link2" after two header lines.
std::map<std::string, std::string, std::less<>> vlan_lowers(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  for (auto line : guest::lines_of(text)) {
    const auto bar1 = line.find('|');
    const auto bar2 = line.rfind('|');
    if (bar1 == std::string_view::npos || bar1 == bar2) continue;
    const auto name = guest::trim(line.substr(0, bar1));
    const auto lower = guest::trim(line.substr(bar2 + 1));
    if (!name.empty() && !lower.empty() && name != "VLAN Dev name") out.emplace(name, lower);
  }
  return out;
}

}  // namespace

std::vector<AgentFacts> read_facts(proxmox::GuestAgent& agent, std::span<const AgentFactsRequest> requests,
                                   const std::string& fstab_path, const std::string& identity) {
  std::vector<std::optional<AgentMiss>> missed(requests.size());
  // What read access cannot do at all: resolve a name, ask Docker. Said before anything is sent.
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (!r.names.empty()) {
      missed[i] = AgentMiss{Outcome::command_missing,
                            "the NAS is named by host name (" + r.names.front() +
                                "), which only a program in the guest can resolve; agent read access runs none",
                            "spec.observe.agent_access: exec, or name the NAS by address", false};
    } else if (r.docker_volumes) {
      missed[i] = AgentMiss{Outcome::command_missing,
                            "a Compose volume's options come from Docker, which agent read access cannot ask",
                            "spec.observe.agent_access: exec", false};
    }
  }
  // Round 1: the interface lists (their names say which sysfs files to read).
  std::vector<proxmox::VmRef> vms;
  std::vector<std::size_t> listed(requests.size(), SIZE_MAX);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (missed[i]) continue;
    listed[i] = vms.size();
    vms.push_back(requests[i].vm);
  }
  auto lists = agent.interfaces(vms);
  // Round 2: every file of every guest in one batch.
  std::vector<proxmox::AgentFileRead> files;
  std::vector<Reads> reads(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (missed[i]) continue;
    const auto& list = lists[listed[i]];
    if (!list) {
      missed[i] = AgentMiss{list.error().outcome, list.error().message,
                            hint_for(list.error(), requests[i].vm, identity), false};
      continue;
    }
    reads[i].first = files.size();
    for (std::size_t f = 0; f < static_cast<std::size_t>(File::count); ++f) {
      files.push_back({requests[i].vm, f == 0 ? fstab_path : std::string(kPaths[f])});
    }
    reads[i].first_if = files.size();
    for (const auto& itf : *list) {
      // A name from the guest becomes part of a path: only a plain interface name may.
      if (itf.name.empty() || itf.name.find('/') != std::string::npos || itf.name == "." || itf.name == "..") continue;
      reads[i].ifs.push_back(itf.name);
      for (auto leaf : kIfFiles)
        files.push_back({requests[i].vm, "/sys/class/net/" + itf.name + "/" + std::string(leaf)});
    }
  }
  auto done = agent.read_files(files);

  std::vector<AgentFacts> out;
  out.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (missed[i]) {
      out.emplace_back(std::unexpected(std::move(*missed[i])));
      continue;
    }
    auto fail = [&](AgentMiss m) { out.emplace_back(std::unexpected(std::move(m))); };
    // Any read the agent refused for another reason than a missing file: the guest is unread.
    std::array<std::string, static_cast<std::size_t>(File::count)> text;
    std::optional<AgentMiss> problem;
    for (std::size_t f = 0; f < static_cast<std::size_t>(File::count) && !problem; ++f) {
      const auto& got = done[reads[i].first + f];
      if (got && got->truncated) {
        problem = AgentMiss{Outcome::agent_error,
                            std::string(f == 0 ? fstab_path : kPaths[f]) + " is longer than the agent reads (16 MiB)",
                            "spec.observe.via: auto reads such a guest over SSH", false};
      } else if (got) {
        text[f] = got->content;
      } else if (not_there(got.error()) && may_be_absent(static_cast<File>(f))) {
        // absent: empty
      } else {
        // The fstab that is not there is the guest's answer (over SSH the script says the same).
        problem = AgentMiss{got.error().outcome, got.error().message, hint_for(got.error(), r.vm, identity),
                            f == 0 && not_there(got.error())};
      }
    }
    if (problem) {
      fail(std::move(*problem));
      continue;
    }
    guest::GuestFacts facts;
    facts.host = r.host;
    auto where = [&](std::string_view path) { return r.host + ":" + std::string(path); };
    auto parsed = [&](auto result, auto& into) {
      if (!result) {
        problem = AgentMiss{Outcome::malformed, result.error().to_string(), {}, true};
        return;
      }
      into = std::move(*result);
    };
    auto at = [&](File f) -> const std::string& { return text[static_cast<std::size_t>(f)]; };
    facts.fstab_content = at(File::fstab);
    facts.fstab_sha256 = guest::sha256_hex(facts.fstab_content);
    facts.fstab = guest::FstabFile::parse(facts.fstab_content, where(fstab_path));
    facts.boot_id = std::string(guest::trim(at(File::boot_id)));
    parsed(guest::parse_proc_mounts(at(File::mounts), where("/proc/mounts")), facts.mounts);
    parsed(guest::parse_mountstats(at(File::mountstats), where("/proc/self/mountstats")), facts.mount_stats);
    parsed(guest::parse_proc_net_dev(at(File::netdev), where("/proc/net/dev")), facts.counters);
    parsed(guest::parse_nfs_servers(at(File::nfs_servers), where("/proc/fs/nfsfs/servers")), facts.nfs_servers);
    std::vector<guest::TcpConnection> v4, v6;
    parsed(guest::parse_proc_net_tcp(at(File::tcp), false, where("/proc/net/tcp")), v4);
    parsed(guest::parse_proc_net_tcp(at(File::tcp6), true, where("/proc/net/tcp6")), v6);
    if (problem) {
      fail(std::move(*problem));
      continue;
    }
    facts.nfs_connections = guest::connections_to_port(v4, 2049);
    for (auto& c : guest::connections_to_port(v6, 2049)) facts.nfs_connections.push_back(std::move(c));
    // Interfaces: the agent's list (names, MACs, addresses), each with its sysfs files.
    const auto vlans = vlan_lowers(at(File::vlans));
    const auto& list = *lists[listed[i]];
    for (std::size_t k = 0; k < reads[i].ifs.size(); ++k) {
      const auto& name = reads[i].ifs[k];
      auto file = [&](IfFile f) -> std::string {
        const auto& got =
            done[reads[i].first_if + k * static_cast<std::size_t>(IfFile::count) + static_cast<std::size_t>(f)];
        return got ? std::string(guest::trim(got->content)) : std::string();
      };
      guest::InterfaceInfo info;
      info.name = name;
      info.queues_unknown = true;
      const auto* agent_if = &*std::ranges::find(list, name, &proxmox::agent::Interface::name);  // it is there
      info.mac = net::MacAddress(agent_if->mac);
      const auto uevent = file(IfFile::uevent);
      if (auto idx = uevent_value(uevent, "IFINDEX"); !idx.empty()) {
        try {
          info.ifindex = std::stoi(idx);
        } catch (...) {
        }
      }
      // A VLAN's lower device is in /proc/net/vlan/config; a bridge's or a bond's ports are
      // directories a file read cannot list.
      if (const auto type = uevent_value(uevent, "DEVTYPE"); !type.empty() && type != "wlan") {
        if (auto v = vlans.find(name); type == "vlan" && v != vlans.end()) {
          info.lowers.push_back(v->second);
        } else {
          info.lowers_unknown = true;
        }
      }
      info.operstate = file(IfFile::operstate);
      if (const auto speed = file(IfFile::speed); !speed.empty()) {
        try {
          if (const long long mbps = std::stoll(speed); mbps > 0) info.speed_mbps = mbps;
        } catch (...) {
        }
      }
      if (const auto mtu = file(IfFile::mtu); !mtu.empty()) {
        try {
          if (const int m = std::stoi(mtu); m > 0) info.mtu = m;
        } catch (...) {
        }
      }
      for (const auto& a : agent_if->addresses) {
        facts.addresses.push_back({name, a.address, a.prefix});
      }
      facts.interfaces.push_back(std::move(info));
    }
    out.emplace_back(std::move(facts));
  }
  return out;
}

}  // namespace pw::observe
