// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/api.hpp"

namespace pw::proxmox {

ApiResult<std::optional<Upid>> Api::update_nic(const VmRef& vm, std::string_view key, const NetDeviceSpec& nic,
                                               std::string_view digest, WriteMode mode) {
  ConfigChange change;
  change.set.emplace_back(std::string(key), nic.to_string());
  change.digest = std::string(digest);
  return update_config(vm, change, mode);
}

namespace {

// The line of a failed task's log that says why: the last one that is neither the "TASK ERROR"
// summary nor the exit status again (QEMU's own complaint comes before "start failed: ...").
std::string telling_line(const std::vector<std::string>& log, const std::string& exitstatus) {
  for (auto it = log.rbegin(); it != log.rend(); ++it) {
    if (it->empty() || it->starts_with("TASK ") || *it == "no content" || *it == exitstatus) continue;
    return *it;
  }
  return {};
}

}  // namespace

// qemu-server's reboot (PVE/QemuServer.pm vm_reboot) ends its qmreboot task once QEMU has exited.
// qmeventd then runs `qm cleanup`, which finds the reboot request and calls vm_start as root@pam
// (PVE/CLI/qm.pm, cleanup): a separate qmstart task (hastart for an HA resource) that this caller
// never gets the UPID of and whose failure is recorded only there. So while waiting for the VM to
// run, each round looks for that task among the node's tasks started since the reboot; one that
// failed ends the wait with its exit status and log line. The list shows a root@pam task only to
// an identity with Sys.Audit on /nodes/NODE: without it the wait runs to its timeout, which then
// says so.
ApiResult<VmStatus> Api::reboot_and_wait(const VmRef& vm, const WaitOptions& wait,
                                         std::optional<int> shutdown_timeout_seconds) {
  auto upid = reboot(vm, shutdown_timeout_seconds);
  if (!upid) return std::unexpected(upid.error());
  auto task = wait_task(*upid, wait);
  if (!task) return std::unexpected(task.error());

  bool listed = true;  // the last task listing answered (it may still hide other users' tasks)
  std::string list_error;
  auto check = [&]() -> ApiStatus {
    TaskQuery q;
    q.vmid = vm.vmid;
    q.since = upid->starttime;
    auto tasks = node_tasks(vm.node, q);
    if (!tasks) {
      listed = false;
      list_error = tasks.error().message;
      return {};  // the list only explains a failure; Proxmox's own state decides
    }
    listed = true;  // the timeout's hint speaks of the last listing, not of one failure long ago
    for (const auto& t : *tasks) {
      if ((t.upid.type != "qmstart" && t.upid.type != "hastart") || t.running || t.succeeded()) continue;
      ApiError e;
      e.kind = ApiErrorKind::task_failed;
      e.task_exitstatus = t.exitstatus;
      e.where = t.upid.text;
      e.message = "VM " + std::to_string(vm.vmid) + " did not start again after the reboot: its " + t.upid.type +
                  " task (" + t.upid.user + ") failed: " + t.exitstatus;
      auto log = task_log(t.upid);
      const std::string line = log ? telling_line(*log, t.exitstatus) : std::string();
      e.hint = (line.empty() ? std::string() : "the task log says: " + line + "; ") +
               "the VM is stopped with the pending changes applied; fix the cause on node " + vm.node +
               " and start it (qm start " + std::to_string(vm.vmid) + ")";
      return api_fail(std::move(e));
    }
    return {};
  };
  auto running = wait_vm_status(vm, "running", wait, check);
  if (!running && running.error().kind == ApiErrorKind::timeout) {
    auto e = running.error();
    e.hint = "the VM did not come back after the reboot; " +
             (listed ? "no failed start task was visible to this identity (it needs Sys.Audit on /nodes/" + vm.node +
                           " to see the root@pam start task Proxmox runs after a reboot)"
                     : "the node's task list could not be read (" + list_error + ")") +
             "; look at the VM's task history on node " + vm.node;
    return api_fail(std::move(e));
  }
  return running;
}

}  // namespace pw::proxmox
