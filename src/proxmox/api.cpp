#include "proxmox/api.hpp"

namespace pw::proxmox {

ApiResult<std::optional<Upid>> Api::update_nic(const VmRef& vm, std::string_view key, const NetDeviceSpec& nic,
                                               std::string_view digest, WriteMode mode) {
  ConfigChange change;
  change.set.emplace_back(std::string(key), nic.to_string());
  change.digest = std::string(digest);
  return update_config(vm, change, mode);
}

ApiResult<VmStatus> Api::reboot_and_wait(const VmRef& vm, const WaitOptions& wait) {
  auto upid = reboot(vm);
  if (!upid) return std::unexpected(upid.error());
  // The reboot task ends once the VM is down; the start that applies pending changes comes after.
  auto task = wait_task(*upid, wait);
  if (!task) return std::unexpected(task.error());
  return wait_vm_status(vm, "running", wait);
}

}  // namespace pw::proxmox
