// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The seed scenario as a simulated world: VM 101 with a management NIC, net1 on the new 10 GbE
// link (ens19) and net2 on the old 1 GbE link (ens20); a knfsd NAS answering on both links; the
// guest already mounts /mnt/tv through the old link's address.
#include <memory>
#include <stdexcept>
#include <string_view>

#include "journal/clock.hpp"
#include "journal/guest_lock.hpp"
#include "journal/result_store.hpp"
#include "journal/storage.hpp"
#include "policy/loader.hpp"
#include "reconcile/engine.hpp"
#include "report/run_report.hpp"
#include "simulated_cluster.hpp"
#include "timing/sleeper.hpp"

namespace pw::testing {

inline constexpr const char* kOldLink = "192.0.2.2";
inline constexpr const char* kNewLink = "198.51.100.2";
inline const std::string kSeedFstab =
    "# /etc/fstab\nUUID=abcd / ext4 errors=remount-ro 0 1\n192.0.2.2:/srv/nas/tv /mnt/tv nfs vers=4.2,_netdev 0 0\n";
inline constexpr const char* kNet1 = "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1";

struct SeedWorld {
  SimulatedProxmox pve;
  SimulatedGuests guests;
  journal::InMemoryJournalStore journals;
  journal::InMemoryGuestLocks locks;
  journal::InMemoryPolicyResultStore results;
  journal::ManualClock clock{std::chrono::system_clock::time_point(std::chrono::hours(24 * 20000))};
  timing::ManualSleeper sleeper;

  SeedWorld() {
    SimulatedProxmox::Vm vm;
    vm.ref = {"pve1", 101};
    vm.current = {{"cores", "2"},
                  {"net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0"},
                  {"net1", kNet1},
                  {"net2", "virtio=BC:24:11:00:00:03,bridge=vmbr2"}};
    pve.vms[101] = vm;
    SimulatedGuests::Guest g;
    g.fstab = kSeedFstab;
    g.nics = {{"ens18", "bc:24:11:00:00:01", 1, 1, 0, 0, 2},
              {"ens19", "bc:24:11:00:00:02", 1, 1, 0, 0, 3},
              {"ens20", "bc:24:11:00:00:03", 1, 1, 0, 0, 4}};
    g.routes = {{kOldLink, "ens20"}, {kNewLink, "ens19"}};
    g.nas_addresses = {kOldLink, kNewLink};
    guests.guests["media-vm"] = g;
    guests.mount(guests.guests["media-vm"], "192.0.2.2:/srv/nas/tv", "/mnt/tv", {"vers=4.2"});
    // Proxmox re-plugs or restarts: the guest's NIC follows (new netdev, counters from 0).
    pve.on_nic_change = [this](int, const std::string& key, const std::string& value) {
      auto spec = proxmox::NetDeviceSpec::parse(value).value();
      auto* nic = guests.nic_by_mac("media-vm", *spec.mac());
      if (nic == nullptr) return;
      (void)key;
      nic->max_channels = spec.queues().value_or(1);
      nic->channels = std::min(nic->max_channels, 2);  // min(queues, vCPUs)
      nic->rx = nic->tx = 0;
      nic->ifindex += 10;
    };
  }

  reconcile::Engine engine(reconcile::EngineOptions o = {}, journal::JournalStore* store = nullptr) {
    return reconcile::Engine({pve, guests, store != nullptr ? *store : journals, locks, results, clock, sleeper, {}},
                             std::move(o));
  }

  SimulatedGuests::Guest& guest() { return guests.guests.at("media-vm"); }
  SimulatedProxmox::Vm& vm() { return pve.vms.at(101); }
};

inline std::vector<policy::StoragePath> movies_policy(const std::string& options, bool queues = true,
                                                      const std::string& server = kNewLink,
                                                      const std::string& nas = kOldLink) {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: movies-10g}\nspec:\n"
      "  guest: {node: pve1, vmid: 101, host: media-vm}\n  nic: {device: net1" +
      std::string(queues ? ", queues: 8" : "") + "}\n  mount:\n    server: " + server + "\n    nas_addresses: [" + nas +
      "]\n    export: /srv/nas/movies\n"
      "    path: /mnt/movies\n    options: " +
      options +
      "\n    reason: vers=3 on purpose, NFSv4.1 trunking\n  verify: {probe_file: probe.bin, probe_bytes: 64MiB}\n"
      "  restart: {allowed: true}\n";
  auto r = policy::load_text(text, "movies.yaml");
  if (!r.ok()) throw std::runtime_error(r.diagnostics.front().to_string());
  return r.paths;
}

// The report as an operator reads it (for INFO), and one policy's entry of it.
inline std::string text(const report::RunReport& r) {
  return report::render_text(r);
}
inline const report::PolicyReport& entry(const report::RunReport& r, std::string_view policy) {
  for (const auto& p : r.policies) {
    if (p.policy == policy) return p;
  }
  throw std::runtime_error("no report entry for policy " + std::string(policy));
}

}  // namespace pw::testing
