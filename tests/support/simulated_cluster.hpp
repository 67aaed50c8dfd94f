// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An in-memory Proxmox cluster and in-memory guests for the engine's unit tests: enough of the
// real semantics (digest, pending vs current, hot-plug, fstab compare-and-swap, NFSv4.1 trunking,
// routes, byte counters) that the engine's decisions can be checked without a lab. The real
// behaviour is proven against pvesim, light guests and the QEMU lab in the integration tests.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "guest/facts.hpp"
#include "guest/fstab.hpp"
#include "guest/port.hpp"
#include "guest/sha256.hpp"
#include "proxmox/api.hpp"

namespace pw::testing {

class SimulatedProxmox final : public proxmox::Api {
 public:
  struct Vm {
    proxmox::VmRef ref;
    std::map<std::string, std::string> current;
    std::map<std::string, std::string> pending;
    std::string status = "running";
    // What /cluster/resources says: pvestatd's last sample, which lags (unset: the live status).
    std::optional<std::string> listed_status;
    std::string lock;
    // status/current's "nics" (tap counters by N of netN); empty: not reported, as by a stopped
    // VM or a proxy. Tests move them through SimulatedGuests::on_wire.
    std::map<int, proxmox::TapCounters> nics;
    std::int64_t pid = 4242;  // the QEMU process: a restart makes a new one (and new taps)
  };
  std::map<int, Vm> vms;
  // Called when a NIC is hot-plugged or the VM restarts, so the guest can follow.
  std::function<void(int vmid, const std::string& key, const std::string& value)> on_nic_change;
  std::function<void(int vmid)> on_restart;
  std::function<void(int vmid)> on_write;  // after a config write was accepted
  int writes = 0;
  int reads = 0;
  std::optional<std::string> conflict_next_write;  // a concurrent edit lands first: this key/value
  bool fail_next_write = false;
  // The API is unreachable (or refuses the token): every read answers this.
  std::optional<proxmox::ApiError> down;
  // The token's privileges by path (GET /access/permissions); a path not listed has none. Unset:
  // every privilege everywhere. permissions_error: the permissions call itself fails so.
  std::optional<std::map<std::string, std::set<std::string>>> acl;
  std::optional<proxmox::ApiError> permissions_error;
  // The start Proxmox runs after a reboot (a root@pam qmstart task) fails with this exit status
  // and log; the VM stays stopped with the pending changes applied.
  std::optional<std::string> restart_start_failure;
  std::vector<std::string> restart_start_log;
  std::vector<proxmox::TaskStatus> task_history;              // finished tasks, oldest first
  std::map<std::string, std::vector<std::string>> task_logs;  // by UPID text
  std::map<std::string, std::string> sdn_vnets;               // VNet -> zone

  static std::string digest_of(const Vm& vm);

  proxmox::ApiResult<std::vector<proxmox::GuestSummary>> list_guests() override;
  proxmox::ApiResult<proxmox::VmConfig> read_config(const proxmox::VmRef& vm, proxmox::ConfigView view) override;
  proxmox::ApiResult<proxmox::PendingConfig> read_pending(const proxmox::VmRef& vm) override;
  proxmox::ApiResult<proxmox::VmStatus> vm_status(const proxmox::VmRef& vm) override;
  std::vector<proxmox::ApiResult<proxmox::VmConfig>> read_configs(std::span<const proxmox::VmRef> v,
                                                                  proxmox::ConfigView view) override;
  std::vector<proxmox::ApiResult<proxmox::PendingConfig>> read_pendings(std::span<const proxmox::VmRef> v) override;
  std::vector<proxmox::ApiResult<proxmox::VmStatus>> vm_statuses(std::span<const proxmox::VmRef> v) override;
  std::vector<proxmox::ApiResult<std::vector<proxmox::VmStatus>>> node_vm_statuses(
      std::span<const std::string> nodes) override;
  int node_reads = 0;            // node_vm_statuses requests (one per node)
  bool fail_node_lists = false;  // GET /nodes/{node}/qemu answers 500 (the rest of the API works)
  proxmox::ApiResult<std::optional<proxmox::Upid>> update_config(const proxmox::VmRef& vm,
                                                                 const proxmox::ConfigChange& change,
                                                                 proxmox::WriteMode mode) override;
  proxmox::ApiResult<proxmox::Upid> start(const proxmox::VmRef& vm) override;
  proxmox::ApiResult<proxmox::Upid> shutdown(const proxmox::VmRef& vm, std::optional<int>) override;
  proxmox::ApiResult<proxmox::Upid> stop(const proxmox::VmRef& vm) override;
  proxmox::ApiResult<proxmox::Upid> reboot(const proxmox::VmRef& vm, std::optional<int>) override;
  proxmox::ApiResult<proxmox::TaskStatus> task_status(const proxmox::Upid& upid) override;
  proxmox::ApiResult<proxmox::TaskStatus> wait_task(const proxmox::Upid& upid, const proxmox::WaitOptions&) override;
  proxmox::ApiResult<proxmox::VmStatus> wait_vm_status(const proxmox::VmRef& vm, std::string_view status,
                                                       const proxmox::WaitOptions&, const RoundCheck& check) override;
  proxmox::ApiResult<std::vector<proxmox::TaskStatus>> node_tasks(const std::string& node,
                                                                  const proxmox::TaskQuery& query) override;
  proxmox::ApiResult<std::vector<std::string>> task_log(const proxmox::Upid& upid) override;
  proxmox::ApiResult<std::map<std::string, std::string>> sdn_vnet_zones() override;
  std::vector<proxmox::ApiResult<std::set<std::string>>> privileges(std::span<const std::string> paths) override;

 private:
  proxmox::ApiResult<Vm*> find(const proxmox::VmRef& ref);
  proxmox::Upid task(const proxmox::VmRef& ref, std::string type);
};

// One guest: fstab, mounts, NICs; a NAS with addresses; routes; the kernel's NFSv4.1 trunking.
class SimulatedGuests final : public guest::GuestPort {
 public:
  struct Nic {
    std::string name;
    std::string mac;
    int channels = 1;
    int max_channels = 1;  // 0: no combined channels (ethtool -l says n/a, as on a veth or an e1000)
    std::uint64_t rx = 0, tx = 0;
    int ifindex = 2;
    // The MAC the hypervisor made the NIC with, when the guest relabelled it (`mac` is what the
    // guest wears now and reports; no permanent address is reported, like a driver without one).
    std::string made_as{};
  };
  struct Mount {
    std::string device, mount_point, vers, addr;
    int nconnect = 1;
    // Its NFS connection as `ss -tni` shows it: the local port, and tcp_info's bytes_received /
    // bytes_acked when a test moves them (unset: no counters, as without tcp_diag).
    int local_port = 700;
    std::optional<std::uint64_t> rx_bytes{}, tx_bytes{};
  };
  struct Guest {
    std::string fstab;
    std::map<std::string, std::string> files;  // backups
    std::vector<Nic> nics;
    std::vector<Mount> mounts;
    std::map<std::string, std::string> routes;                   // server address → interface name
    std::map<std::string, std::vector<std::string>> hosts_file;  // what its resolver gives for a name
    std::set<std::string> nas_addresses;  // one NAS answering on all these (knfsd: one client id)
    bool reachable = true;
    bool fail_mounts = false;
    bool sunrpc = true;   // false: a kernel without sunrpc's sysfs (before 5.14): no transport moves
    bool ethtool = true;  // false: no ethtool in the guest, so its facts carry no channel parameters
    std::uint64_t background_rx_per_probe = 0;  // noise on the first NIC
    // What `docker volume inspect` gives there (or Docker's error), when a policy asks.
    Result<std::vector<guest::DockerVolume>> docker_volumes = std::vector<guest::DockerVolume>{};
    // What a probe's commit cycles give there, when asked for (unset: 1 ms per commit).
    std::optional<guest::CommitRun> commit;
    // The facts' sudo check, as when the settings become root with sudo (unset: not checked).
    std::optional<guest::SudoCheck> sudo;
  };
  std::map<std::string, Guest> guests;
  int runs = 0;  // "ansible-playbook processes"
  // Each run in order: the call and the hosts it covered ("restore_fstab a,b"), for tests of
  // what a phase batches and what it leaves out.
  std::vector<std::string> calls;
  std::vector<std::string> unmounted;                  // every mount point a change or restore took down, in order
  std::optional<std::string> edit_fstab_before_apply;  // someone edits the fstab between observe and write
  // Called for the probe's bytes with the NIC they crossed, by the MAC it was made with: what the
  // hypervisor's tap of that NIC counts.
  std::function<void(const std::string& host, const std::string& made_as, std::uint64_t bytes, verify::ProbeDirection)>
      on_wire;

  Nic* nic_by_mac(const std::string& host, const std::string& mac);
  void mount(Guest& g, const std::string& device, const std::string& mount_point, const std::vector<std::string>& opts);

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
  guest::GuestFacts facts_of(const std::string& host, const Guest& g) const;
  verify::CounterSnapshot snapshot(const Guest& g, std::int64_t t) const;
  guest::GuestResult<void> activate(Guest& g, const std::vector<guest::MountActivation>& activations);
  void record(std::string call, const std::vector<std::string>& hosts);
  // As the Ansible port does (one play per phase, a host once in it): a call that names a guest
  // twice fails for every guest it names, nothing done.
  template <class Request>
  static auto twice(std::span<const Request> requests) {
    using Answer = std::conditional_t<std::is_same_v<Request, guest::ProbeRequest>,
                                      guest::GuestResult<guest::ProbeOutcome>, guest::GuestResult<void>>;
    std::optional<std::map<std::string, Answer>> out;
    std::set<std::string> seen;
    bool dup = false;
    for (const auto& r : requests) dup = !seen.insert(r.host).second || dup;
    if (!dup) return out;
    out.emplace();
    for (const auto& h : seen) {
      out->emplace(h, std::unexpected(guest::GuestFailure{guest::GuestFailure::Kind::failed,
                                                          Error{"guest appears twice in one run", h, {}}}));
    }
    return out;
  }
  template <class Request>
  void record(std::string call, std::span<const Request> requests) {
    std::vector<std::string> hosts;
    for (const auto& r : requests) hosts.push_back(r.host);
    record(std::move(call), hosts);
  }
};

}  // namespace pw::testing
