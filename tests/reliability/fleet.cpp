// SPDX-License-Identifier: GPL-3.0-or-later
#include "fleet.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "policy/loader.hpp"
#include "proxmox/net_device.hpp"
#include "temp_dir.hpp"

namespace pw::reliability {
namespace bj = boost::json;
using proxmox::testing::PvesimProcess;
using testing::SimulatedGuests;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string text_of(const bj::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  return bj::serialize(v);
}

int cores_of(const bj::object& config) {
  if (const auto* c = config.if_contains("cores")) return std::max(1, std::stoi(text_of(*c)));
  return 1;
}

bool is_net_key(std::string_view k) {
  return k.size() > 3 && k.starts_with("net") && std::all_of(k.begin() + 3, k.end(), ::isdigit);
}

std::string policy_text(const FleetVm& vm) {
  return "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: data-" + std::to_string(vm.vmid) +
         "}\nspec:\n  guest: {node: " + vm.node + ", vmid: " + std::to_string(vm.vmid) + ", host: " + vm.host +
         "}\n  nic: {device: " + vm.device + ", queues: " + std::to_string(vm.queues_wanted) +
         "}\n  mount:\n    server: " + kServer + "\n    export: /srv/" + vm.host + "\n    path: " + kMountPoint +
         "\n    options: [vers=3, _netdev]\n    reason: the fleet's data share\n"
         "  verify: {probe_file: probe.bin, probe_bytes: 16MiB}\n  restart: {allowed: true}\n";
}

}  // namespace

std::string initial_fstab(const std::string& host) {
  return "# /etc/fstab of " + host + "\nUUID=0c1f-" + host + " / ext4 errors=remount-ro 0 1\n";
}

// ---- guests bound to pvesim ------------------------------------------------------------------

void PvesimBoundGuests::add_guest(const FleetVm& vm, const bj::object& config) {
  SimulatedGuests::Guest g;
  g.fstab = initial_fstab(vm.host);
  g.nas_addresses = {kServer};
  vmid_of_[vm.host] = vm.vmid;
  auto& added = sims_.guests[vm.host] = std::move(g);
  follow_nics(added, vm.vmid, config);
  // The share is reached through the policy's NIC.
  for (const auto& n : added.nics) {
    if (n.name == "ens" + std::to_string(18 + std::stoi(vm.device.substr(3)))) added.routes[kServer] = n.name;
  }
}

void PvesimBoundGuests::follow_nics(SimulatedGuests::Guest& g, int vmid, const bj::object& config) {
  auto& seen = seen_nets_[vmid];
  const int cores = cores_of(config);
  for (const auto& [key, value] : config) {
    if (!is_net_key(key)) continue;
    const std::string text = text_of(value);
    if (seen[std::string(key)] == text) continue;
    seen[std::string(key)] = text;
    auto spec = proxmox::NetDeviceSpec::parse(text);
    if (!spec || !spec->mac()) continue;
    const std::string name = "ens" + std::to_string(18 + std::stoi(std::string(key.substr(3))));
    auto it = std::find_if(g.nics.begin(), g.nics.end(), [&](const auto& n) { return n.name == name; });
    if (it == g.nics.end()) {
      g.nics.push_back({name, lower(*spec->mac()), 1, 1, 0, 0, static_cast<int>(2 + g.nics.size())});
      it = g.nics.end() - 1;
    } else {
      it->ifindex += 10;  // a re-plugged NIC is a new netdev with counters from 0
      it->rx = it->tx = 0;
    }
    it->mac = lower(*spec->mac());
    it->max_channels = spec->queues().value_or(1);
    it->channels = std::min(it->max_channels, cores);
  }
}

void PvesimBoundGuests::sync() {
  const auto state = sim_->admin("GET", "/pvesim/state");
  std::map<int, const bj::object*> by_vmid;
  for (const auto& g : state.as_object().at("guests").as_array()) {
    by_vmid[g.as_object().at("vmid").to_number<int>()] = &g.as_object();
  }
  for (auto& [host, g] : sims_.guests) {
    auto it = by_vmid.find(vmid_of_.at(host));
    if (it == by_vmid.end()) {
      g.reachable = false;
      continue;
    }
    g.reachable = it->second->at("running").as_bool();
    follow_nics(g, it->first, it->second->at("config").as_object());
  }
}

std::map<std::string, guest::GuestResult<guest::GuestFacts>> PvesimBoundGuests::gather_facts(
    std::span<const std::string> hosts, const guest::FactsRequests& names) {
  sync();
  return sims_.gather_facts(hosts, names);
}

std::map<std::string, guest::GuestResult<void>> PvesimBoundGuests::apply_fstab(
    std::span<const guest::FstabChange> changes) {
  sync();
  return sims_.apply_fstab(changes);
}

std::map<std::string, guest::GuestResult<void>> PvesimBoundGuests::restore_fstab(
    std::span<const guest::FstabRestore> r) {
  sync();
  return sims_.restore_fstab(r);
}

std::map<std::string, guest::GuestResult<void>> PvesimBoundGuests::set_channels(
    std::span<const guest::ChannelsRequest> r) {
  sync();
  return sims_.set_channels(r);
}

std::map<std::string, guest::GuestResult<void>> PvesimBoundGuests::move_transport(
    std::span<const guest::TransportMove> r) {
  sync();
  return sims_.move_transport(r);
}

std::map<std::string, guest::GuestResult<guest::ProbeOutcome>> PvesimBoundGuests::probe(
    std::span<const guest::ProbeRequest> probes) {
  sync();
  return sims_.probe(probes);
}

std::map<std::string, guest::GuestResult<guest::GuestFacts>> PvesimBoundGuests::wait_reachable(
    std::span<const std::string> hosts, std::chrono::seconds timeout) {
  sync();
  return sims_.wait_reachable(hosts, timeout);
}

// ---- the fleet -------------------------------------------------------------------------------

namespace {

std::vector<std::string> base_args() {
  return {"--token",
          "root@pam!fleet=fleet-token-secret-0123",
          "--user",
          "root@pam=fleet-password-4567",
          "--auth-failure-delay-ms",
          "0",
          "--task-duration-ms",
          "10",
          "--boot-delay-ms",
          "20"};
}

}  // namespace

Fleet::Fleet(int count, std::vector<std::string> extra) : bound(nullptr) {
  args_ = base_args();
  args_.insert(args_.end(), {"--dump-state", testing::make_temp_dir("pw-fleet") + "/state.json"});
  auto first = args_;
  first.insert(first.end(), {"--vms", std::to_string(count)});
  first.insert(first.end(), extra.begin(), extra.end());
  sim_ = std::make_unique<PvesimProcess>(first);
  bound.rebind(sim_.get());

  const auto state = sim_->admin("GET", "/pvesim/state");
  for (const auto& g : state.as_object().at("guests").as_array()) {
    const auto& o = g.as_object();
    if (o.at("type").as_string() != "qemu" || !o.at("running").as_bool()) continue;
    const auto& config = o.at("config").as_object();
    FleetVm vm;
    vm.vmid = o.at("vmid").to_number<int>();
    vm.node = std::string(o.at("node").as_string());
    vm.host = "vm" + std::to_string(vm.vmid);
    for (const char* key : {"net1", "net0"}) {
      const auto* v = config.if_contains(key);
      if (v == nullptr) continue;
      auto spec = proxmox::NetDeviceSpec::parse(text_of(*v));
      if (!spec || spec->model() != "virtio") continue;
      vm.device = key;
      vm.nic_before = text_of(*v);
      vm.queues_wanted = spec->queues().value_or(1) == 4 ? 2 : 4;
      break;
    }
    if (vm.device.empty()) continue;  // an e1000 NIC only: queues do not apply
    const auto* hp = config.if_contains("hotplug");
    vm.hotplug = hp == nullptr || text_of(*hp).find("network") != std::string::npos;
    vms.push_back(vm);
    bound.add_guest(vm, config);
    auto loaded = policy::load_text(policy_text(vm), vm.host + ".yaml");
    if (!loaded.ok()) throw std::runtime_error(loaded.diagnostics.front().to_string());
    policies.insert(policies.end(), loaded.paths.begin(), loaded.paths.end());
  }

  engine_options.task_wait = {std::chrono::seconds(60), std::chrono::milliseconds(10), std::chrono::milliseconds(50)};
  engine_options.guest_return_timeout = std::chrono::seconds(30);
  engine_options.interface_return_timeout = std::chrono::seconds(30);
  engine_options.requeue_backoff = std::chrono::milliseconds(10);
}

void Fleet::restart_pvesim_with_new_certificate() {
  const auto port = proxmox::parse_api_url(sim_->url())->port;
  std::string dump;
  for (std::size_t i = 0; i + 1 < args_.size(); ++i) {
    if (args_[i] == "--dump-state") dump = args_[i + 1];
  }
  if (sim_->stop() != 0) throw std::runtime_error("pvesim did not stop cleanly");
  auto args = args_;
  args.insert(args.end(), {"--state", dump, "--port", port});
  retired_.push_back(std::move(sim_));
  sim_ = std::make_unique<PvesimProcess>(args);
  bound.rebind(sim_.get());
}

proxmox::ClientOptions Fleet::token_options() const {
  auto o = sim_->client_options("root@pam!fleet", "fleet-token-secret-0123");
  o.ca_file.clear();
  o.fingerprint = sim_->fingerprint();  // pinned, as an operator pins a node's self-signed certificate
  o.timeout = std::chrono::seconds(10);
  return o;
}

proxmox::ClientOptions Fleet::ticket_options() const {
  auto o = token_options();
  o.token_id.clear();
  o.token_secret = {};
  o.user = "root@pam";
  o.password = proxmox::Secret("fleet-password-4567");
  return o;
}

std::unique_ptr<proxmox::Client> Fleet::client(const proxmox::ClientOptions& options) const {
  auto c = proxmox::Client::create(options);
  if (!c) throw std::runtime_error(c.error().to_string());
  return std::move(*c);
}

reconcile::Engine Fleet::engine(proxmox::Api& api) {
  return reconcile::Engine({api, guests, journals, locks, results, clock, sleeper, {}}, engine_options);
}

std::map<int, bj::object> Fleet::vm_states() {
  std::map<int, bj::object> out;
  const auto state = sim_->admin("GET", "/pvesim/state");
  for (const auto& g : state.as_object().at("guests").as_array()) {
    out[g.as_object().at("vmid").to_number<int>()] = g.as_object();
  }
  return out;
}

}  // namespace pw::reliability
