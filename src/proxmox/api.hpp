// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What pathwarden asks of a Proxmox VE cluster, as a small interface: the executor and planner
// depend on this, Client implements it over HTTPS, tests may run it against tests/pvesim.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxmox/api_error.hpp"
#include "proxmox/net_device.hpp"
#include "proxmox/types.hpp"

namespace pw::proxmox {

enum class ConfigView {
  current,       // current=1: the values in effect (what the running VM uses)
  with_pending,  // Proxmox's default: pending values folded in as if applied
};

enum class WriteMode {
  sync_put,   // PUT .../config: done when the answer arrives
  task_post,  // POST .../config: returns a qmconfig task to wait for
};

// One config write. The digest is required: a write is always made against the config it was
// planned from, so a concurrent change makes Proxmox refuse it (ApiErrorKind::digest_conflict).
struct ConfigChange {
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> remove;
  std::string digest;
};

class Api {
 public:
  virtual ~Api() = default;

  virtual ApiResult<std::vector<GuestSummary>> list_guests() = 0;
  virtual ApiResult<VmConfig> read_config(const VmRef& vm, ConfigView view = ConfigView::current) = 0;
  virtual ApiResult<PendingConfig> read_pending(const VmRef& vm) = 0;
  virtual ApiResult<VmStatus> vm_status(const VmRef& vm) = 0;

  // Many reads at once over pooled connections, at most max_in_flight at a time. One result per
  // VM, in the order given; one VM's failure never fails the others.
  virtual std::vector<ApiResult<VmConfig>> read_configs(std::span<const VmRef> vms,
                                                        ConfigView view = ConfigView::current) = 0;
  virtual std::vector<ApiResult<PendingConfig>> read_pendings(std::span<const VmRef> vms) = 0;
  virtual std::vector<ApiResult<VmStatus>> vm_statuses(std::span<const VmRef> vms) = 0;
  // Every QEMU VM of each node, live, with its pid and tap counters ("nics"), in one read per node
  // (GET /nodes/{node}/qemu?full=1; qemu-server PVE/API2/Qemu.pm vmlist → PVE/QemuServer.pm
  // vmstatus(undef, $full), which fills "nics" only when $full): a converged run's tap counters
  // for a whole node at the cost of one request. One result per node, in the order given.
  virtual std::vector<ApiResult<std::vector<VmStatus>>> node_vm_statuses(std::span<const std::string> nodes) = 0;

  // Writes are sent once, never retried blindly. Refused before sending: no digest, or a netN
  // without its MAC (Proxmox would invent a new MAC and the guest would see a new NIC).
  virtual ApiResult<std::optional<Upid>> update_config(const VmRef& vm, const ConfigChange& change,
                                                       WriteMode mode = WriteMode::sync_put) = 0;
  ApiResult<std::optional<Upid>> update_nic(const VmRef& vm, std::string_view key, const NetDeviceSpec& nic,
                                            std::string_view digest, WriteMode mode = WriteMode::sync_put);

  virtual ApiResult<Upid> start(const VmRef& vm) = 0;
  virtual ApiResult<Upid> shutdown(const VmRef& vm, std::optional<int> timeout_seconds = std::nullopt) = 0;
  virtual ApiResult<Upid> stop(const VmRef& vm) = 0;
  // Applies pending changes. The task ends after the shutdown; the VM comes back later.
  virtual ApiResult<Upid> reboot(const VmRef& vm, std::optional<int> timeout_seconds = std::nullopt) = 0;

  virtual ApiResult<TaskStatus> task_status(const Upid& upid) = 0;
  // Polls with growing intervals until the task stops. "OK" and "WARNINGS: N" are success; any other
  // exit status is ApiErrorKind::task_failed; still running at the deadline is ApiErrorKind::timeout.
  virtual ApiResult<TaskStatus> wait_task(const Upid& upid, const WaitOptions& wait = {}) = 0;
  // Run after each poll that did not see the status yet; an error ends the wait with it.
  using RoundCheck = std::function<ApiStatus()>;
  // Polls status/current until the VM reports `status` ("running", "stopped").
  virtual ApiResult<VmStatus> wait_vm_status(const VmRef& vm, std::string_view status, const WaitOptions& wait = {},
                                             const RoundCheck& check = {}) = 0;
  // Tasks of a node, running and finished (GET /nodes/{node}/tasks?source=all). Other users' tasks
  // (such as the root@pam start after a reboot) are listed only with Sys.Audit on /nodes/{node}.
  virtual ApiResult<std::vector<TaskStatus>> node_tasks(const std::string& node, const TaskQuery& query) = 0;
  // Every line of a task's log.
  virtual ApiResult<std::vector<std::string>> task_log(const Upid& upid) = 0;
  // SDN VNet -> zone for the VNets this identity may audit (GET /cluster/sdn/vnets).
  virtual ApiResult<std::map<std::string, std::string>> sdn_vnet_zones() = 0;

  // reboot, wait for its task, then wait until the VM runs again. The VM comes back in a separate
  // start task (see reboot_and_wait in api.cpp); when that one fails, so does this, with its exit
  // status and log line, instead of waiting out `wait.timeout`.
  ApiResult<VmStatus> reboot_and_wait(const VmRef& vm, const WaitOptions& wait = {},
                                      std::optional<int> shutdown_timeout_seconds = std::nullopt);

  // The caller's own privileges on each path (GET /access/permissions?path=P), as Proxmox works
  // them out: ACL propagation, pools, and for a token with privilege separation the intersection
  // with its user's. One result per path, in order. For preflight, never instead of the checks
  // Proxmox makes at each call.
  virtual std::vector<ApiResult<std::set<std::string>>> privileges(std::span<const std::string> paths) = 0;
};

}  // namespace pw::proxmox
