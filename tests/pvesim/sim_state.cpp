// SPDX-License-Identifier: GPL-3.0-or-later
#include "sim_state.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <ctime>
#include <random>
#include <sstream>

#include "recorded_agent.hpp"

namespace pvesim {

namespace bj = boost::json;

const std::set<std::string> kAllPrivileges = {
    "VM.Audit", "VM.Config.Network", "VM.Config.Options", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk",
    "VM.Config.HWType", "VM.Config.CDROM", "VM.Config.Cloudinit", "VM.PowerMgmt", "SDN.Use", "SDN.Audit", "Sys.Audit",
    // PVE 9's guest agent privileges (pve-access-control 922f710, PVE/AccessControl.pm $privgroups;
    // docs/guest-agent-upstream.md §1.2). PVE 8's VM.Monitor is not one: PVE 9 refuses it.
    "VM.GuestAgent.Audit", "VM.GuestAgent.FileRead", "VM.GuestAgent.FileWrite", "VM.GuestAgent.FileSystemMgmt",
    "VM.GuestAgent.Unrestricted"};

std::optional<std::set<std::string>> parse_privileges(const std::string& list, std::string& error) {
  if (list.empty() || list == "all") return kAllPrivileges;
  if (list == "none") return std::set<std::string>{};
  std::set<std::string> out;
  std::stringstream ss(list);
  std::string p;
  while (std::getline(ss, p, ',')) {
    if (p.empty()) continue;
    if (!kAllPrivileges.contains(p)) {
      error = "unknown privilege '" + p + "'";
      return std::nullopt;
    }
    out.insert(p);
  }
  return out;
}

bool Vm::pending_delete_has(const std::string& key) const {
  return std::ranges::any_of(pending_delete, [&](const PendingDelete& d) { return d.key == key; });
}

void Vm::remove_pending_delete(const std::string& key) {
  std::erase_if(pending_delete, [&](const PendingDelete& d) { return d.key == key; });
}

namespace {

std::string generate_raw(const Config& conf, bool pending) {
  std::string raw;
  if (auto d = conf.find("description"); d != conf.end()) {
    if (!d->second.empty()) {
      std::stringstream ss(d->second);
      std::string line;
      while (std::getline(ss, line)) raw += "#" + line + "\n";
    } else if (pending) {
      raw += "#\n";
    }
  }
  for (const auto& [k, v] : conf) {
    if (k == "description" || k == "digest") continue;
    raw += k + ": " + v + "\n";
  }
  return raw;
}

std::string hex(const unsigned char* data, std::size_t n, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 0xF];
  }
  return out;
}

std::string text_of(const bj::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  if (v.is_bool()) return v.as_bool() ? "1" : "0";
  if (v.is_double()) {
    std::ostringstream os;
    os << v.as_double();
    return os.str();
  }
  return bj::serialize(v);
}

bool read_config_object(const bj::value& v, Config& out, const std::string& where, std::string& error) {
  if (!v.is_object()) {
    error = where + ": must be an object of key: value";
    return false;
  }
  for (const auto& [k, val] : v.as_object()) {
    if (val.is_null()) continue;
    if (val.is_object() || val.is_array()) {
      error = where + "." + std::string(k) + ": must be a string or number";
      return false;
    }
    out[std::string(k)] = text_of(val);
  }
  return true;
}

}  // namespace

std::string render_config_file(const Vm& vm) {
  std::string raw = generate_raw(vm.conf, false);
  if (vm.has_pending()) {
    Config p = vm.pending;
    if (!vm.pending_delete.empty()) {
      std::string del;
      for (const auto& d : vm.pending_delete) del += (del.empty() ? "" : ",") + std::string(d.force ? "!" : "") + d.key;
      p["delete"] = del;
    }
    raw += "\n[PENDING]\n" + generate_raw(p, true);
  }
  return raw;
}

std::string config_digest(const Vm& vm) {
  const std::string raw = render_config_file(vm);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(raw.data(), raw.size(), md, &len, EVP_sha1(), nullptr);
  return hex(md, len, false);
}

Config config_with_pending(const Vm& vm) {
  Config c = vm.conf;
  for (const auto& d : vm.pending_delete) c.erase(d.key);
  for (const auto& [k, v] : vm.pending) c[k] = v;
  return c;
}

void apply_pending(Vm& vm) {
  for (const auto& d : vm.pending_delete) vm.conf.erase(d.key);
  for (const auto& [k, v] : vm.pending) vm.conf[k] = v;
  vm.pending.clear();
  vm.pending_delete.clear();
}

void cleanup_pending(Vm& vm) {
  for (auto it = vm.pending.begin(); it != vm.pending.end();) {
    auto cur = vm.conf.find(it->first);
    if (cur != vm.conf.end() && cur->second == it->second) {
      it = vm.pending.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(vm.pending_delete, [&](const PendingDelete& d) { return !vm.conf.contains(d.key); });
}

Vm* Cluster::find(int vmid) const {
  auto it = vms.find(vmid);
  return it == vms.end() ? nullptr : it->second.get();
}

std::string Cluster::generate_mac() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::uint64_t r = rng() ^ (++mac_counter_ * 0x9E3779B97F4A7C15ULL);
  char buf[32];
  std::snprintf(buf, sizeof buf, ":%02X:%02X:%02X", static_cast<unsigned>(r & 0xFF),
                static_cast<unsigned>((r >> 8) & 0xFF), static_cast<unsigned>((r >> 16) & 0xFF));
  return mac_prefix + buf;
}

void generate_fleet(Cluster& cluster, int count, int nodes, std::uint64_t seed) {
  if (cluster.nodes.empty()) {
    for (int n = 1; n <= std::max(1, nodes); ++n) cluster.nodes.push_back("pve" + std::to_string(n));
  }
  std::mt19937_64 rng(seed);
  auto mac = [&] {
    char buf[32];
    const std::uint64_t r = rng();
    std::snprintf(buf, sizeof buf, ":%02X:%02X:%02X", static_cast<unsigned>(r & 0xFF),
                  static_cast<unsigned>((r >> 8) & 0xFF), static_cast<unsigned>((r >> 16) & 0xFF));
    return cluster.mac_prefix + buf;
  };
  int vmid = 100;
  for (int i = 0; i < count; ++i, ++vmid) {
    while (cluster.vms.contains(vmid)) ++vmid;
    auto vm = std::make_unique<Vm>();
    vm->vmid = vmid;
    vm->node = cluster.nodes[static_cast<std::size_t>(i) % cluster.nodes.size()];
    vm->running = i % 7 != 3;
    if (i % 10 == 9) {
      vm->type = "lxc";
      vm->conf = {{"hostname", "ct-" + std::to_string(vmid)},
                  {"memory", "512"},
                  {"net0", "name=eth0,bridge=vmbr0,hwaddr=" + mac() + ",ip=dhcp,type=veth"},
                  {"ostype", "debian"}};
    } else {
      const std::string model = i % 11 == 5 ? "e1000" : "virtio";
      vm->conf = {
          {"boot", "order=scsi0;net0"},
          {"cores", std::to_string(1 + i % 4)},
          {"memory", std::to_string(1024 * (1 + i % 4))},
          {"name", "vm-" + std::to_string(vmid)},
          {"net0", model + "=" + mac() + ",bridge=vmbr0,firewall=1"},
          {"ostype", "l26"},
          {"scsi0", "local-lvm:vm-" + std::to_string(vmid) + "-disk-0,iothread=1,size=32G"},
          {"scsihw", "virtio-scsi-single"},
          {"sockets", "1"},
      };
      if (i % 2 == 0) {
        std::string net1 = "virtio=" + mac() + ",bridge=vmbr1";
        if (i % 4 == 0) net1 += ",queues=" + std::to_string(i % 8 == 0 ? 8 : 4);
        vm->conf["net1"] = net1;
      }
      if (i % 5 == 4) vm->conf["hotplug"] = "disk,usb";  // network hot-plug off
    }
    if (vm->running) {
      vm->pid = 10000 + vmid;
      vm->started_at = static_cast<std::int64_t>(std::time(nullptr)) - 3600;
    }
    cluster.vms[vm->vmid] = std::move(vm);
  }
}

bool load_state(Cluster& cluster, const bj::value& state, std::string& error) {
  if (!state.is_object()) {
    error = "the state must be a JSON object";
    return false;
  }
  const auto& o = state.as_object();
  if (auto* n = o.if_contains("cluster"); n && n->is_string()) cluster.name = std::string(n->as_string());
  if (auto* p = o.if_contains("mac_prefix"); p && p->is_string()) cluster.mac_prefix = std::string(p->as_string());
  if (auto* vnets = o.if_contains("sdn_vnets")) {
    if (!vnets->is_object()) {
      error = "sdn_vnets: must map each SDN VNet to its zone";
      return false;
    }
    for (const auto& [vnet, zone] : vnets->as_object()) {
      if (!zone.is_string()) {
        error = "sdn_vnets." + std::string(vnet) + ": the zone must be a string";
        return false;
      }
      cluster.sdn_vnets[std::string(vnet)] = std::string(zone.as_string());
    }
  }
  if (auto* nodes = o.if_contains("nodes")) {
    if (!nodes->is_array()) {
      error = "nodes: must be a list of node names";
      return false;
    }
    for (const auto& n : nodes->as_array()) {
      if (n.is_string()) {
        cluster.nodes.emplace_back(n.as_string());
      } else if (n.is_object() && n.as_object().contains("node")) {
        cluster.nodes.emplace_back(n.as_object().at("node").as_string());
      } else {
        error = "nodes: each entry must be a name or {\"node\": name}";
        return false;
      }
    }
  }
  const bj::value* guests = o.if_contains("guests");
  if (guests == nullptr) guests = o.if_contains("vms");
  if (guests == nullptr) return true;
  if (!guests->is_array()) {
    error = "guests: must be a list";
    return false;
  }
  std::size_t index = 0;
  for (const auto& g : guests->as_array()) {
    const std::string where = "guests[" + std::to_string(index++) + "]";
    if (!g.is_object()) {
      error = where + ": must be an object";
      return false;
    }
    const auto& go = g.as_object();
    auto vm = std::make_unique<Vm>();
    auto* vmid = go.if_contains("vmid");
    if (vmid == nullptr || !vmid->is_number() || vmid->to_number<std::int64_t>() < 100 ||
        vmid->to_number<std::int64_t>() > 999999999) {
      error = where + ": vmid must be a number from 100 to 999999999";
      return false;
    }
    vm->vmid = static_cast<int>(vmid->to_number<std::int64_t>());
    if (cluster.vms.contains(vm->vmid)) {
      error = where + ": vmid " + std::to_string(vm->vmid) + " appears twice";
      return false;
    }
    if (auto* node = go.if_contains("node"); node && node->is_string()) {
      vm->node = std::string(node->as_string());
    } else {
      error = where + ": node (string) is missing";
      return false;
    }
    if (std::ranges::find(cluster.nodes, vm->node) == cluster.nodes.end()) cluster.nodes.push_back(vm->node);
    if (auto* t = go.if_contains("type"); t && t->is_string()) vm->type = std::string(t->as_string());
    if (vm->type != "qemu" && vm->type != "lxc") {
      error = where + ": type must be qemu or lxc";
      return false;
    }
    if (auto* r = go.if_contains("running"); r && r->is_bool()) vm->running = r->as_bool();
    if (auto* h = go.if_contains("hook"); h && h->is_string()) vm->hook = std::string(h->as_string());
    if (auto* i = go.if_contains("ignores_shutdown"); i && i->is_bool()) vm->ignores_shutdown = i->as_bool();
    if (auto* a = go.if_contains("agent"); a && !a->is_null()) {
      if (vm->agent = parse_recorded_agent(*a, where + ".agent", error); !vm->agent) return false;
    }
    if (auto* c = go.if_contains("config"); c && !read_config_object(*c, vm->conf, where + ".config", error)) {
      return false;
    }
    if (auto* p = go.if_contains("pending"); p && !read_config_object(*p, vm->pending, where + ".pending", error)) {
      return false;
    }
    if (auto* d = go.if_contains("pending_delete"); d && d->is_array()) {
      for (const auto& k : d->as_array()) {
        if (!k.is_string()) continue;
        std::string key(k.as_string());
        const bool force = key.starts_with("!");
        vm->pending_delete.push_back({force ? key.substr(1) : key, force});
      }
    }
    if (vm->running) {
      vm->pid = 10000 + vm->vmid;
      vm->started_at = static_cast<std::int64_t>(std::time(nullptr)) - 3600;
    }
    cluster.vms[vm->vmid] = std::move(vm);
  }
  return true;
}

bj::value dump_state(const Cluster& cluster) {
  bj::object out;
  out["cluster"] = cluster.name;
  out["mac_prefix"] = cluster.mac_prefix;
  bj::array nodes;
  for (const auto& n : cluster.nodes) nodes.emplace_back(n);
  out["nodes"] = std::move(nodes);
  if (!cluster.sdn_vnets.empty()) {
    bj::object vnets;
    for (const auto& [vnet, zone] : cluster.sdn_vnets) vnets[vnet] = zone;
    out["sdn_vnets"] = std::move(vnets);
  }
  bj::array guests;
  for (const auto& [vmid, vm] : cluster.vms) {
    bj::object g;
    g["vmid"] = vmid;
    g["node"] = vm->node;
    g["type"] = vm->type;
    g["running"] = vm->running;
    if (!vm->hook.empty()) g["hook"] = vm->hook;
    if (vm->ignores_shutdown) g["ignores_shutdown"] = true;
    if (vm->agent) g["agent"] = recorded_agent_json(*vm->agent);
    bj::object conf;
    for (const auto& [k, v] : vm->conf) conf[k] = v;
    g["config"] = std::move(conf);
    if (!vm->pending.empty()) {
      bj::object p;
      for (const auto& [k, v] : vm->pending) p[k] = v;
      g["pending"] = std::move(p);
    }
    if (!vm->pending_delete.empty()) {
      bj::array d;
      for (const auto& pd : vm->pending_delete) d.emplace_back((pd.force ? "!" : "") + pd.key);
      g["pending_delete"] = std::move(d);
    }
    if (vm->type == "qemu") g["digest"] = config_digest(*vm);
    guests.push_back(std::move(g));
  }
  out["guests"] = std::move(guests);
  return out;
}

}  // namespace pvesim
