// SPDX-License-Identifier: GPL-3.0-or-later
#include "simulated_cluster.hpp"

#include <algorithm>
#include <sstream>

#include "guest/mounts.hpp"
#include "net/mac_address.hpp"

namespace pw::testing {
namespace {

proxmox::ApiError api_error(proxmox::ApiErrorKind kind, std::string message, std::string where) {
  proxmox::ApiError e;
  e.kind = kind;
  e.message = std::move(message);
  e.where = std::move(where);
  return e;
}

}  // namespace

using proxmox::ApiError;
using proxmox::ApiErrorKind;
using proxmox::ApiResult;

std::string SimulatedProxmox::digest_of(const Vm& vm) {
  std::string text;
  for (const auto& [k, v] : vm.current) text += k + ": " + v + "\n";
  text += "[PENDING]\n";
  for (const auto& [k, v] : vm.pending) text += k + ": " + v + "\n";
  return guest::sha256_hex(text).substr(0, 40);
}

ApiResult<SimulatedProxmox::Vm*> SimulatedProxmox::find(const proxmox::VmRef& ref) {
  auto it = vms.find(ref.vmid);
  if (it == vms.end() || it->second.ref.node != ref.node) {
    return std::unexpected(api_error(ApiErrorKind::not_found, "Configuration file does not exist", ref.to_string()));
  }
  return &it->second;
}

proxmox::Upid SimulatedProxmox::task(const proxmox::VmRef& ref, std::string type) {
  proxmox::Upid u;
  u.node = ref.node;
  u.type = std::move(type);
  u.id = std::to_string(ref.vmid);
  u.user = "root@pam";
  u.text = "UPID:" + ref.node + ":0:0:0:" + u.type + ":" + u.id + ":root@pam:";
  return u;
}

ApiResult<std::vector<proxmox::GuestSummary>> SimulatedProxmox::list_guests() {
  ++reads;
  if (down) return std::unexpected(*down);
  std::vector<proxmox::GuestSummary> out;
  for (const auto& [id, vm] : vms) {
    proxmox::GuestSummary g;
    g.ref = vm.ref;
    g.status = vm.listed_status.value_or(vm.status);
    g.lock = vm.lock;
    out.push_back(g);
  }
  return out;
}

ApiResult<proxmox::VmConfig> SimulatedProxmox::read_config(const proxmox::VmRef& ref, proxmox::ConfigView view) {
  ++reads;
  auto vm = find(ref);
  if (!vm) return std::unexpected(vm.error());
  proxmox::VmConfig c;
  c.ref = ref;
  c.digest = digest_of(**vm);
  auto merged = (*vm)->current;
  if (view == proxmox::ConfigView::with_pending) {
    for (const auto& [k, v] : (*vm)->pending) merged[k] = v;
  }
  c.entries.assign(merged.begin(), merged.end());
  return c;
}

ApiResult<proxmox::PendingConfig> SimulatedProxmox::read_pending(const proxmox::VmRef& ref) {
  ++reads;
  if (down) return std::unexpected(*down);
  auto vm = find(ref);
  if (!vm) return std::unexpected(vm.error());
  proxmox::PendingConfig p;
  p.ref = ref;
  p.digest = digest_of(**vm);
  std::set<std::string> keys;
  for (const auto& [k, v] : (*vm)->current) keys.insert(k);
  for (const auto& [k, v] : (*vm)->pending) keys.insert(k);
  for (const auto& k : keys) {
    proxmox::PendingItem item;
    item.key = k;
    if (auto it = (*vm)->current.find(k); it != (*vm)->current.end()) item.value = it->second;
    if (auto it = (*vm)->pending.find(k); it != (*vm)->pending.end()) item.pending = it->second;
    p.items.push_back(item);
  }
  return p;
}

ApiResult<proxmox::VmStatus> SimulatedProxmox::vm_status(const proxmox::VmRef& ref) {
  ++reads;
  auto vm = find(ref);
  if (!vm) return std::unexpected(vm.error());
  proxmox::VmStatus s;
  s.ref = ref;
  s.status = (*vm)->status;
  s.lock = (*vm)->lock;
  s.nics = (*vm)->nics;
  if (s.status == "running") s.pid = (*vm)->pid;
  return s;
}

std::vector<ApiResult<proxmox::VmConfig>> SimulatedProxmox::read_configs(std::span<const proxmox::VmRef> v,
                                                                         proxmox::ConfigView view) {
  std::vector<ApiResult<proxmox::VmConfig>> out;
  for (const auto& r : v) out.push_back(read_config(r, view));
  return out;
}

std::vector<ApiResult<proxmox::PendingConfig>> SimulatedProxmox::read_pendings(std::span<const proxmox::VmRef> v) {
  std::vector<ApiResult<proxmox::PendingConfig>> out;
  for (const auto& r : v) out.push_back(read_pending(r));
  return out;
}

std::vector<ApiResult<proxmox::VmStatus>> SimulatedProxmox::vm_statuses(std::span<const proxmox::VmRef> v) {
  std::vector<ApiResult<proxmox::VmStatus>> out;
  for (const auto& r : v) out.push_back(vm_status(r));
  return out;
}

std::vector<ApiResult<std::vector<proxmox::VmStatus>>> SimulatedProxmox::node_vm_statuses(
    std::span<const std::string> nodes) {
  std::vector<ApiResult<std::vector<proxmox::VmStatus>>> out;
  for (const auto& node : nodes) {
    ++node_reads;
    if (down) {
      out.emplace_back(std::unexpected(*down));
      continue;
    }
    if (fail_node_lists) {
      out.emplace_back(
          std::unexpected(api_error(ApiErrorKind::http, "500 Internal Server Error", "GET /nodes/" + node + "/qemu")));
      continue;
    }
    std::vector<proxmox::VmStatus> list;
    for (const auto& [vmid, vm] : vms) {
      if (vm.ref.node != node) continue;
      --reads;  // counted as the node's read, not the VM's
      auto s = vm_status(vm.ref);
      if (s) list.push_back(std::move(*s));
    }
    out.emplace_back(std::move(list));
  }
  return out;
}

ApiResult<std::optional<proxmox::Upid>> SimulatedProxmox::update_config(const proxmox::VmRef& ref,
                                                                        const proxmox::ConfigChange& change,
                                                                        proxmox::WriteMode) {
  auto found = find(ref);
  if (!found) return std::unexpected(found.error());
  Vm& vm = **found;
  if (conflict_next_write) {
    // Someone else's edit lands between our read and our write.
    vm.current["description"] = *conflict_next_write;
    conflict_next_write.reset();
  }
  if (change.digest != digest_of(vm)) {
    return std::unexpected(api_error(ApiErrorKind::digest_conflict, "checksum mismatch (file change by other user?)",
                                     "PUT " + ref.to_string()));
  }
  if (!vm.lock.empty()) {
    return std::unexpected(api_error(ApiErrorKind::locked, "VM is locked (" + vm.lock + ")", ref.to_string()));
  }
  if (fail_next_write) {
    fail_next_write = false;
    return std::unexpected(api_error(ApiErrorKind::http, "simulated failure", ref.to_string()));
  }
  ++writes;
  if (on_write) on_write(ref.vmid);
  const auto hotplug = vm.current.contains("hotplug") ? vm.current["hotplug"] : std::string("network,disk,usb");
  const bool live = vm.status == "running" && hotplug.find("network") != std::string::npos && hotplug != "0";
  for (const auto& [k, v] : change.set) {
    if (vm.current[k] == v) {
      vm.pending.erase(k);  // cleanup_pending: a value equal to the current one is dropped
      continue;
    }
    if (live && k.starts_with("net")) {
      vm.current[k] = v;
      vm.pending.erase(k);
      if (on_nic_change) on_nic_change(ref.vmid, k, v);
    } else if (vm.status != "running") {
      vm.current[k] = v;
    } else {
      vm.pending[k] = v;
    }
  }
  return std::optional<proxmox::Upid>{};
}

ApiResult<proxmox::Upid> SimulatedProxmox::start(const proxmox::VmRef& ref) {
  auto vm = find(ref);
  if (!vm) return std::unexpected(vm.error());
  (*vm)->status = "running";
  return task(ref, "qmstart");
}

ApiResult<proxmox::Upid> SimulatedProxmox::shutdown(const proxmox::VmRef& ref, std::optional<int>) {
  auto vm = find(ref);
  if (!vm) return std::unexpected(vm.error());
  (*vm)->status = "stopped";
  return task(ref, "qmshutdown");
}

ApiResult<proxmox::Upid> SimulatedProxmox::stop(const proxmox::VmRef& ref) {
  return shutdown(ref, std::nullopt);
}

ApiResult<proxmox::Upid> SimulatedProxmox::reboot(const proxmox::VmRef& ref, std::optional<int>) {
  auto found = find(ref);
  if (!found) return std::unexpected(found.error());
  Vm& vm = **found;
  for (const auto& [k, v] : vm.pending) {
    vm.current[k] = v;
    if (k.starts_with("net") && on_nic_change) on_nic_change(ref.vmid, k, v);
  }
  vm.pending.clear();
  auto upid = task(ref, "qmreboot");
  if (restart_start_failure) {
    vm.status = "stopped";
    proxmox::TaskStatus start;
    start.upid = task(ref, "qmstart");
    start.running = false;
    start.exitstatus = *restart_start_failure;
    task_logs[start.upid.text] = restart_start_log;
    task_history.push_back(std::move(start));
    return upid;
  }
  ++vm.pid;
  for (auto& [n, c] : vm.nics) c = {};  // new taps
  if (on_restart) on_restart(ref.vmid);
  return upid;
}

ApiResult<proxmox::TaskStatus> SimulatedProxmox::task_status(const proxmox::Upid& upid) {
  proxmox::TaskStatus t;
  t.upid = upid;
  t.running = false;
  t.exitstatus = "OK";
  return t;
}

ApiResult<proxmox::TaskStatus> SimulatedProxmox::wait_task(const proxmox::Upid& upid, const proxmox::WaitOptions&) {
  return task_status(upid);
}

ApiResult<proxmox::VmStatus> SimulatedProxmox::wait_vm_status(const proxmox::VmRef& ref, std::string_view status,
                                                              const proxmox::WaitOptions&, const RoundCheck& check) {
  auto st = vm_status(ref);
  if (st && st->status != status && check) {
    if (auto ok = check(); !ok) return std::unexpected(ok.error());
  }
  return st;
}

ApiResult<std::vector<proxmox::TaskStatus>> SimulatedProxmox::node_tasks(const std::string& node,
                                                                         const proxmox::TaskQuery& query) {
  ++reads;
  if (down) return std::unexpected(*down);
  std::vector<proxmox::TaskStatus> out;
  for (auto it = task_history.rbegin(); it != task_history.rend(); ++it) {
    if (it->upid.node != node || (query.vmid && it->upid.id != std::to_string(*query.vmid))) continue;
    if (!query.typefilter.empty() && it->upid.type != query.typefilter) continue;
    out.push_back(*it);
  }
  return out;
}

ApiResult<std::vector<std::string>> SimulatedProxmox::task_log(const proxmox::Upid& upid) {
  ++reads;
  if (down) return std::unexpected(*down);
  auto it = task_logs.find(upid.text);
  return it == task_logs.end() ? std::vector<std::string>{"no content"} : it->second;
}

ApiResult<std::map<std::string, std::string>> SimulatedProxmox::sdn_vnet_zones() {
  ++reads;
  if (down) return std::unexpected(*down);
  return sdn_vnets;
}

std::vector<ApiResult<std::set<std::string>>> SimulatedProxmox::privileges(std::span<const std::string> paths) {
  std::vector<ApiResult<std::set<std::string>>> out;
  for (const auto& p : paths) {
    if (down)
      out.emplace_back(std::unexpected(*down));
    else if (permissions_error)
      out.emplace_back(std::unexpected(*permissions_error));
    else if (!acl)
      out.emplace_back(std::set<std::string>{"VM.Audit", "VM.Config.Network", "VM.PowerMgmt", "SDN.Use", "Sys.Audit"});
    else if (auto it = acl->find(p); it != acl->end())
      out.emplace_back(it->second);
    else
      out.emplace_back(std::set<std::string>{});
  }
  return out;
}

// ---- guests --------------------------------------------------------------------------------

namespace {

std::string version_of(const std::vector<std::string>& opts) {
  for (const auto& o : opts) {
    if (o.starts_with("vers=")) return o.substr(5);
    if (o.starts_with("nfsvers=")) return o.substr(8);
  }
  return "4.2";  // what the kernel negotiates with knfsd
}

int nconnect_of(const std::vector<std::string>& opts) {
  for (const auto& o : opts) {
    if (o.starts_with("nconnect=")) return std::stoi(o.substr(9));
  }
  return 1;
}

guest::GuestFailure failure(guest::GuestFailure::Kind k, std::string what, const std::string& host) {
  return {k, Error{std::move(what), host, {}}};
}

}  // namespace

SimulatedGuests::Nic* SimulatedGuests::nic_by_mac(const std::string& host, const std::string& mac) {
  auto& g = guests.at(host);
  for (auto& n : g.nics) {
    if (net::MacAddress(n.mac) == net::MacAddress(mac)) return &n;
  }
  return nullptr;
}

void SimulatedGuests::mount(Guest& g, const std::string& device, const std::string& mount_point,
                            const std::vector<std::string>& opts) {
  const auto colon = device.rfind(':');
  std::string server = device.substr(0, colon);
  if (auto named = g.hosts_file.find(server); named != g.hosts_file.end() && !named->second.empty()) {
    server = named->second.front();  // mount.nfs mounts the first address the name resolves to
  }
  const std::string vers = version_of(opts);
  Mount m{device, mount_point, vers, server, nconnect_of(opts)};
  const bool v41 = vers == "4.1" || vers == "4.2" || vers == "4";
  for (const auto& other : g.mounts) {
    // knfsd answers every address with one client id: a v4.1+ mount joins the existing client.
    if (v41 && other.vers == vers && other.addr != server && g.nas_addresses.contains(server) &&
        g.nas_addresses.contains(other.addr)) {
      m.addr = other.addr;
      m.nconnect = other.nconnect;
      break;
    }
    if (other.addr == server && other.vers == vers) m.nconnect = other.nconnect;  // shared client
  }
  g.mounts.push_back(m);
}

guest::GuestFacts SimulatedGuests::facts_of(const std::string& host, const Guest& g) const {
  guest::GuestFacts f;
  f.host = host;
  f.fstab_content = g.fstab;
  f.fstab_sha256 = guest::sha256_hex(g.fstab);
  f.fstab = guest::FstabFile::parse(g.fstab);
  std::string proc_mounts;
  for (const auto& m : g.mounts) {
    proc_mounts += m.device + " " + m.mount_point + (m.vers == "3" ? " nfs rw,vers=3" : " nfs4 rw,vers=" + m.vers) +
                   (m.nconnect > 1 ? ",nconnect=" + std::to_string(m.nconnect) : "") + ",addr=" + m.addr + " 0 0\n";
  }
  f.mounts = guest::parse_proc_mounts(proc_mounts).value();
  f.transport_move = g.sunrpc ? guest::TransportMoveSupport::present : guest::TransportMoveSupport::absent;
  for (const auto& n : g.nics) {
    guest::InterfaceInfo i;
    i.name = n.name;
    i.mac = n.mac;
    i.ifindex = n.ifindex;
    i.operstate = "up";
    i.rx_queues = i.tx_queues = n.channels;
    guest::EthtoolChannels ch;
    ch.interface = n.name;
    if (n.max_channels > 0) {  // else n/a
      ch.current.combined = n.channels;
      ch.maximum.combined = n.max_channels;
    }
    if (g.ethtool) i.channels = ch;
    f.interfaces.push_back(i);
    guest::InterfaceCounters c;
    c.name = n.name;
    c.rx_bytes = n.rx;
    c.tx_bytes = n.tx;
    f.counters.push_back(c);
  }
  // Each NIC holds a guest address (ip -o addr); a mount's connection leaves from the address of
  // the interface its server's route takes, as the kernel picks the source (the first NIC when
  // no route names the server).
  for (std::size_t k = 0; k < g.nics.size(); ++k) {
    f.addresses.push_back({g.nics[k].name, "203.0.113." + std::to_string(100 + k), 24});
  }
  for (const auto& m : g.mounts) {
    guest::TcpConnection c;
    c.local_address = "192.0.2.10";
    if (auto r = g.routes.find(m.addr); r != g.routes.end()) {
      for (std::size_t k = 0; k < g.nics.size(); ++k) {
        if (g.nics[k].name == r->second) c.local_address = "203.0.113." + std::to_string(100 + k);
      }
    }
    c.local_port = m.local_port;
    c.bytes_received = m.rx_bytes;
    c.bytes_acked = m.tx_bytes;
    c.peer_address = m.addr;
    c.peer_port = 2049;
    f.nfs_connections.push_back(c);
  }
  return f;
}

verify::CounterSnapshot SimulatedGuests::snapshot(const Guest& g, std::int64_t t) const {
  verify::CounterSnapshot s;
  s.taken_at = std::chrono::seconds(t);
  for (const auto& n : g.nics) {
    verify::InterfaceCounters c;
    c.name = n.name;
    c.mac = n.mac;
    c.rx_bytes = n.rx;
    c.tx_bytes = n.tx;
    c.ifindex = n.ifindex;
    s.interfaces.push_back(c);
  }
  return s;
}

std::map<std::string, guest::GuestResult<guest::GuestFacts>> SimulatedGuests::gather_facts(
    std::span<const std::string> hosts, const guest::FactsRequests& names) {
  ++runs;
  record("gather_facts", std::vector<std::string>(hosts.begin(), hosts.end()));
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> out;
  for (const auto& h : hosts) {
    auto it = guests.find(h);
    if (it == guests.end() || !it->second.reachable) {
      out.emplace(h, std::unexpected(failure(guest::GuestFailure::Kind::unreachable, "unreachable", h)));
    } else {
      auto facts = facts_of(h, it->second);
      if (auto asked = names.find(h); asked != names.end()) {
        for (const auto& n : asked->second.names) {
          auto known = it->second.hosts_file.find(n);
          facts.resolved[n] = known == it->second.hosts_file.end() ? std::vector<std::string>{} : known->second;
        }
      }
      if (auto asked = names.find(h); asked != names.end() && asked->second.docker_volumes) {
        facts.docker = it->second.docker_volumes;
      }
      facts.sudo = it->second.sudo;
      out.emplace(h, std::move(facts));
    }
  }
  return out;
}

void SimulatedGuests::record(std::string call, const std::vector<std::string>& hosts) {
  for (std::size_t i = 0; i < hosts.size(); ++i) call += (i == 0 ? " " : ",") + hosts[i];
  calls.push_back(std::move(call));
}

guest::GuestResult<void> SimulatedGuests::activate(Guest& g, const std::vector<guest::MountActivation>& acts) {
  for (auto it = acts.rbegin(); it != acts.rend(); ++it) {
    unmounted.push_back(it->path);
    std::erase_if(g.mounts, [&](const Mount& m) { return m.mount_point == it->path; });
  }
  for (const auto& a : acts) {
    if (!a.mount) continue;
    if (g.fail_mounts) return std::unexpected(failure(guest::GuestFailure::Kind::failed, "mount failed", "guest"));
    mount(g, a.source, a.path, a.options);
  }
  return {};
}

std::map<std::string, guest::GuestResult<void>> SimulatedGuests::apply_fstab(
    std::span<const guest::FstabChange> changes) {
  ++runs;
  record("apply_fstab", changes);
  if (auto refused = twice(changes)) return *refused;
  std::map<std::string, guest::GuestResult<void>> out;
  for (const auto& c : changes) {
    auto& g = guests.at(c.host);
    if (edit_fstab_before_apply) {
      g.fstab += *edit_fstab_before_apply;
      edit_fstab_before_apply.reset();
    }
    if (!g.reachable) {
      out.emplace(c.host, std::unexpected(failure(guest::GuestFailure::Kind::unreachable, "unreachable", c.host)));
      continue;
    }
    if (guest::sha256_hex(g.fstab) != c.observed_sha256) {
      out.emplace(c.host, std::unexpected(failure(guest::GuestFailure::Kind::conflict,
                                                  "the fstab changed since it was observed", c.host)));
      continue;
    }
    g.files[c.backup_path] = g.fstab;
    g.fstab = c.new_content;
    out.emplace(c.host, activate(g, c.activations));
  }
  return out;
}

std::map<std::string, guest::GuestResult<void>> SimulatedGuests::restore_fstab(
    std::span<const guest::FstabRestore> restores) {
  ++runs;
  record("restore_fstab", restores);
  if (auto refused = twice(restores)) return *refused;
  std::map<std::string, guest::GuestResult<void>> out;
  for (const auto& r : restores) {
    auto& g = guests.at(r.host);
    const auto now = guest::sha256_hex(g.fstab);
    if (now != r.written_sha256 && now != r.backup_sha256) {
      out.emplace(r.host, std::unexpected(failure(guest::GuestFailure::Kind::conflict,
                                                  "the fstab changed since pathwarden wrote it", r.host)));
      continue;
    }
    if (now != r.backup_sha256) {
      auto b = g.files.find(r.backup_path);
      if (b == g.files.end()) {
        out.emplace(r.host, std::unexpected(failure(guest::GuestFailure::Kind::failed, "backup missing", r.host)));
        continue;
      }
      g.fstab = b->second;
    }
    const bool fail = g.fail_mounts;
    g.fail_mounts = false;  // a rollback mounts the old, known-good way
    out.emplace(r.host, activate(g, r.activations));
    g.fail_mounts = fail;
  }
  return out;
}

std::map<std::string, guest::GuestResult<void>> SimulatedGuests::set_channels(
    std::span<const guest::ChannelsRequest> requests) {
  ++runs;
  record("set_channels", requests);
  if (auto refused = twice(requests)) return *refused;
  std::map<std::string, guest::GuestResult<void>> out;
  for (const auto& r : requests) {
    auto& g = guests.at(r.host);
    auto nic = std::find_if(g.nics.begin(), g.nics.end(), [&](const Nic& n) { return n.name == r.interface; });
    if (nic != g.nics.end() && nic->max_channels == 0) {  // no combined channels: the script sets nothing
      if (r.restore)
        out.emplace(r.host, guest::GuestResult<void>{});
      else
        out.emplace(r.host, std::unexpected(failure(guest::GuestFailure::Kind::untouched,
                                                    r.interface + " has no combined channels to set", r.host)));
      continue;
    }
    if (nic != g.nics.end() && r.restore && nic->channels == r.combined) {  // the script's no-op
      out.emplace(r.host, guest::GuestResult<void>{});
      continue;
    }
    if (nic == g.nics.end() || r.combined > nic->max_channels) {
      out.emplace(r.host, std::unexpected(failure(guest::GuestFailure::Kind::failed, "ethtool -L failed", r.host)));
      continue;
    }
    nic->channels = r.combined;
    out.emplace(r.host, guest::GuestResult<void>{});
  }
  return out;
}

// As transport.sh does: the mount named by the policy's server and riding `from` has its client
// moved (every mount of that client, same NFS version, follows); refused before anything when
// the mount is not as planned; a restore is a no-op where there is nothing to move back.
std::map<std::string, guest::GuestResult<void>> SimulatedGuests::move_transport(
    std::span<const guest::TransportMove> requests) {
  ++runs;
  record("move_transport", requests);
  if (auto refused = twice(requests)) return *refused;
  std::map<std::string, guest::GuestResult<void>> out;
  for (const auto& r : requests) {
    auto& g = guests.at(r.host);
    auto untouched = [&](const std::string& why) {
      out.emplace(r.host, std::unexpected(failure(guest::GuestFailure::Kind::untouched, why, r.host)));
    };
    Mount* m = nullptr;
    for (auto& x : g.mounts) {
      if (x.mount_point == r.mount_point) m = &x;
    }
    if (!g.sunrpc) {
      untouched("no sunrpc sysfs");
      continue;
    }
    if (m == nullptr || (r.restore && m->addr != r.from) || (!r.restore && m->addr == r.to)) {
      if (r.restore || m != nullptr)
        out.emplace(r.host, guest::GuestResult<void>{});
      else
        untouched(r.mount_point + " is not mounted");
      continue;
    }
    if (!r.restore && (m->device.substr(0, m->device.find(':')) != r.mounted_as || m->addr != r.from)) {
      untouched(r.mount_point + " rides " + m->addr + ", not " + r.from);
      continue;
    }
    const std::string vers = m->vers;
    for (auto& x : g.mounts) {
      if (x.addr == r.from && x.vers == vers) x.addr = r.to;
    }
    out.emplace(r.host, guest::GuestResult<void>{});
  }
  return out;
}

std::map<std::string, guest::GuestResult<guest::ProbeOutcome>> SimulatedGuests::probe(
    std::span<const guest::ProbeRequest> probes) {
  ++runs;
  record("probe", probes);
  if (auto refused = twice(probes)) return *refused;
  std::map<std::string, guest::GuestResult<guest::ProbeOutcome>> out;
  for (const auto& p : probes) {
    auto& g = guests.at(p.host);
    const Mount* m = nullptr;
    for (const auto& mm : g.mounts) {
      if (p.path.starts_with(mm.mount_point + "/")) m = &mm;
    }
    if (m == nullptr) {
      out.emplace(p.host, std::unexpected(failure(guest::GuestFailure::Kind::failed,
                                                  "dd: " + p.path + ": No such file or directory", p.host)));
      continue;
    }
    guest::ProbeOutcome o;
    o.samples.baseline_start = snapshot(g, 0);
    o.samples.baseline_end = snapshot(g, 2);
    o.samples.before_probe = o.samples.baseline_end;
    auto route = g.routes.find(m->addr);
    const std::string via = route == g.routes.end() ? g.nics.front().name : route->second;
    for (auto& n : g.nics) {
      if (n.name != via) continue;
      (p.direction == verify::ProbeDirection::read ? n.rx : n.tx) += p.bytes + p.bytes / 200;
      if (on_wire) on_wire(p.host, n.made_as.empty() ? n.mac : n.made_as, p.bytes + p.bytes / 200, p.direction);
    }
    g.nics.front().rx += g.background_rx_per_probe;
    o.samples.after_probe = snapshot(g, 4);
    o.run = {p.bytes, p.direction, std::chrono::seconds(2)};
    o.after = facts_of(p.host, g);
    if (p.commit_cycles > 0)
      o.commit = g.commit.value_or(guest::CommitRun{p.commit_cycles, p.commit_cycles * 0.001, {}});
    out.emplace(p.host, std::move(o));
  }
  return out;
}

std::map<std::string, guest::GuestResult<guest::GuestFacts>> SimulatedGuests::wait_reachable(
    std::span<const std::string> hosts, std::chrono::seconds) {
  ++runs;
  record("wait_reachable", std::vector<std::string>(hosts.begin(), hosts.end()));
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> out;
  for (const auto& h : hosts) {
    if (guests.at(h).reachable)
      out.emplace(h, facts_of(h, guests.at(h)));
    else
      out.emplace(h, std::unexpected(failure(guest::GuestFailure::Kind::timeout, "did not come back", h)));
  }
  return out;
}

}  // namespace pw::testing
