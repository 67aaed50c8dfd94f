// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A 200-VM fleet for the Proxmox fault tests: the real pvesim (tests/pvesim) on loopback, the real
// proxmox::Client and reconcile::Engine, and one in-process simulated guest per VM
// (SimulatedGuests, tests/support) whose NICs follow what pvesim says is in effect. The guest
// side is simulated here on purpose (200 QEMU guests cannot run on 2 cores); it is proven real
// by the light-guest and lab tests.
#include <boost/json.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "case_record.hpp"
#include "injecting_guests.hpp"
#include "journal/clock.hpp"
#include "journal/guest_lock.hpp"
#include "journal/result_store.hpp"
#include "journal/storage.hpp"
#include "policy/model.hpp"
#include "proxmox/client.hpp"
#include "pvesim_process.hpp"
#include "reconcile/engine.hpp"
#include "simulated_cluster.hpp"
#include "timing/sleeper.hpp"

namespace pw::reliability {

// One policy per running QEMU VM with a virtio NIC: a queues change, restart allowed.
struct FleetVm {
  int vmid = 0;
  std::string node;
  std::string host;        // "vm<vmid>", the guest's inventory name
  std::string device;      // net1 where the VM has one, else net0
  std::string nic_before;  // the netN value before any run
  int queues_wanted = 1;
  bool hotplug = true;  // network hot-plug on: the change re-plugs; off: it needs a restart
};

// The simulated guests, bound to pvesim. Before every call they are brought in line with the
// VM's config in effect: a NIC whose netN changed (re-plugged, or applied by a restart) comes
// back with max channels = queues, current = min(queues, cores) and counters from 0; a VM that
// is not running does not answer.
class PvesimBoundGuests final : public guest::GuestPort {
 public:
  explicit PvesimBoundGuests(proxmox::testing::PvesimProcess* sim) : sim_(sim) {}

  void rebind(proxmox::testing::PvesimProcess* sim) { sim_ = sim; }
  void add_guest(const FleetVm& vm, const boost::json::object& config);
  std::map<std::string, testing::SimulatedGuests::Guest>& guests() { return sims_.guests; }

  using guest::GuestPort::gather_facts;
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> gather_facts(std::span<const std::string> hosts,
                                                                            const guest::FactsRequests& names) override;
  std::map<std::string, guest::GuestResult<void>> apply_fstab(std::span<const guest::FstabChange> changes) override;
  std::map<std::string, guest::GuestResult<void>> restore_fstab(std::span<const guest::FstabRestore> r) override;
  std::map<std::string, guest::GuestResult<void>> set_channels(std::span<const guest::ChannelsRequest> r) override;
  std::map<std::string, guest::GuestResult<void>> move_transport(std::span<const guest::TransportMove> r) override;
  std::map<std::string, guest::GuestResult<guest::ProbeOutcome>> probe(
      std::span<const guest::ProbeRequest> probes) override;
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> wait_reachable(std::span<const std::string> hosts,
                                                                              std::chrono::seconds timeout) override;

 private:
  void sync();
  void follow_nics(testing::SimulatedGuests::Guest& g, int vmid, const boost::json::object& config);

  proxmox::testing::PvesimProcess* sim_;
  testing::SimulatedGuests sims_;
  std::map<std::string, int> vmid_of_;                           // host -> vmid
  std::map<int, std::map<std::string, std::string>> seen_nets_;  // vmid -> netN -> value in effect
};

inline constexpr const char* kServer = "198.51.100.2";
inline constexpr const char* kMountPoint = "/mnt/data";
std::string initial_fstab(const std::string& host);

// pvesim --vms N with a token and a user, fast tasks; the policies and guests made from its
// generated configs (read through pvesim's state, as an inventory would be).
class Fleet {
 public:
  explicit Fleet(int vms, std::vector<std::string> extra_pvesim_args = {});

  proxmox::testing::PvesimProcess& sim() { return *sim_; }
  // Stops pvesim (dumping its state) and starts it again on the same port from that state: a
  // new self-signed certificate, as after a node's certificate was renewed.
  void restart_pvesim_with_new_certificate();

  proxmox::ClientOptions token_options() const;
  proxmox::ClientOptions ticket_options() const;
  std::unique_ptr<proxmox::Client> client(const proxmox::ClientOptions& options) const;

  reconcile::Engine engine(proxmox::Api& api);
  boost::json::object stats() { return sim_->admin("GET", "/pvesim/stats").as_object(); }
  std::int64_t stat(const char* name) { return stats().at(name).to_number<std::int64_t>(); }
  // vmid -> {"config": {...}, "pending": {...}} as pvesim holds it now.
  std::map<int, boost::json::object> vm_states();

  std::vector<FleetVm> vms;
  std::vector<policy::StoragePath> policies;
  PvesimBoundGuests bound;        // the simulated guests
  InjectingGuests guests{bound};  // what the engine talks to; tests inject faults here
  journal::InMemoryJournalStore journals;
  journal::InMemoryGuestLocks locks;
  journal::InMemoryPolicyResultStore results;
  journal::SystemClock clock;
  timing::ManualSleeper sleeper;
  reconcile::EngineOptions engine_options;

 private:
  std::vector<std::string> args_;
  std::unique_ptr<proxmox::testing::PvesimProcess> sim_;
  std::vector<std::unique_ptr<proxmox::testing::PvesimProcess>> retired_;
};

}  // namespace pw::reliability
