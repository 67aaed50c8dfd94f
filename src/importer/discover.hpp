// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `pathwarden import` (issue 41 item 12): the NFS mounts a guest has now, each as the policy that
// describes it as it is — as `terraform import -generate-config-out` writes the configuration of
// what exists. Pure: the guest's facts and the Proxmox VMs' configs in, the policies out (with
// what was observed, for the file's comments) and the mounts left out with why. The controller
// gathers the inputs (controller/cmd_import.cpp) and importer/policy_yaml.hpp writes the files.
//
// What "as it is" means, so that the next reconcile adopts the mount without re-making it:
// - a mount with an fstab entry (owner fstab): the entry's server (as written: an address or a
//   name), export and options byte for byte — the planner then only writes its comment above the
//   entry (plan/mount_steps.cpp plan_comment_write); no NIC queues (nic.queues absent: not managed);
// - a Compose volume (owner compose): the volume's driver_opts `o:` options, addr= left out;
// - a mount with no fstab entry (owner systemd, or autofs under an autofs trigger): the options the
//   kernel shows that a policy checks (vers=, nconnect=, ro).
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/facts.hpp"
#include "policy/model.hpp"
#include "proxmox/types.hpp"

namespace pw::importer {

// The VM a guest is, found by its interfaces' permanent addresses among the VMs' NIC MACs.
struct GuestVm {
  proxmox::VmRef vm;
  std::string vm_name;
  std::vector<std::pair<std::string, std::string>> nics;  // netN → its property string
};
// The VM whose NICs carry the guest's interfaces' identities; an error when none does or when
// the interfaces point at more than one VM (cloned MACs).
Result<GuestVm> vm_of_guest(const std::vector<guest::InterfaceInfo>& interfaces,
                            std::span<const proxmox::VmConfig> configs, std::span<const proxmox::GuestSummary> names);

struct ImportedPolicy {
  std::string name;  // metadata.name, unique among the existing policies and this import
  std::string host;
  proxmox::VmRef vm;
  std::string nic_device;          // netN
  std::optional<int> nic_queues;   // as the VM has them now (for the comment; not managed)
  std::string interface;           // the guest interface that carries the mount's traffic
  std::string interface_found_by;  // "its NFS connection" or "the subnet of 198.51.100.2"
  policy::MountOwner owner = policy::MountOwner::fstab;
  std::optional<policy::ComposeVolume> compose;
  std::string server;
  std::vector<std::string> nas_addresses;
  std::string export_path;
  std::string path;  // empty for a Compose volume
  std::vector<std::string> options;
  std::vector<std::string> allow;  // suid, dev, exec: in the options as found
  std::string reason;              // from pathwarden's own fstab comment, when the entry has one
  std::string probe_file = ".pathwarden-probe";
  // What was observed, for the file's comments: the mount as the kernel shows it, the fstab line.
  std::string mounted_as;          // "198.51.100.2:/srv/nas/movies nfs vers=3,nconnect=8,..."
  std::string fstab_line;          // the entry as written, when it has one
  std::vector<std::string> notes;  // what the operator should look at
};

struct Skipped {
  std::string host;
  std::string mount;  // mount point (or Docker volume)
  std::string why;
};

struct Discovery {
  std::vector<ImportedPolicy> policies;
  std::vector<Skipped> skipped;
};

struct Wanted {
  std::vector<std::string> mount_paths;  // empty: every NFS mount
};

// The policies for one guest's NFS mounts. `existing`: the policies already in the directory (a
// mount one of them describes is skipped, and their names are not taken again); `taken`: names
// given earlier in this import (updated).
Discovery discover(const guest::GuestFacts& facts, const GuestVm& vm, const Wanted& wanted,
                   std::span<const policy::StoragePath> existing, std::vector<std::string>& taken);

// "media-vm-mnt-movies": a valid metadata.name from the parts (lower-case, '-' for anything
// else, at most 63 characters), made unique against `taken` with "-2", "-3"...
std::string policy_name(std::string_view host, std::string_view what, const std::vector<std::string>& taken);

}  // namespace pw::importer
