// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Mounts pathwarden observes and proves but never writes (spec.mount.owner compose, systemd,
// autofs): where the owner mounts it, how the owner configured it, and — when that differs from
// the policy — the remedy, in the owner's own words (the Compose file's driver_opts, the unit's
// Options=, the map entry). Pure, like the planner that calls it.
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/facts.hpp"
#include "policy/model.hpp"

namespace pw::plan {

struct UnownedMount {
  std::string path;  // where the owner mounts it (compose: Docker's Mountpoint)
  // compose: Docker's name of the volume, for the remedy's `docker volume rm`: PROJECT_VOLUME
  // unless the Compose file sets `name:` (the volume is found by its labels either way).
  std::string volume_name;
  // How the owner configured it, where pathwarden can read that (a Compose volume's
  // driver_opts), and each way it differs from the policy.
  std::string configured;
  std::vector<std::string> differences;
};

// `written`: the policy as written (names as given); `resolved`: with the guest's addresses.
Result<UnownedMount> locate_unowned_mount(const policy::StoragePath& written, const policy::StoragePath& resolved,
                                          const guest::GuestFacts& facts);

// The `o:` string a Compose volume's driver_opts must hold for the policy:
// "addr=198.51.100.2,rw,nfsvers=4.2,nconnect=4" (fstab-only options such as _netdev left out).
std::string compose_o_option(const policy::StoragePath& written);

// systemd's unit name for a mount point (systemd-escape --path --suffix=mount).
std::string systemd_mount_unit(std::string_view path);

// Who else made a mount, when /proc/mounts tells: "Docker" (under a Docker volume directory),
// "autofs" (an autofs trigger at the same path, a direct map's, or at a directory above it, an
// indirect map's); empty when it does not tell.
std::string other_owner_of(const std::vector<guest::MountInfo>& mounts, const guest::MountInfo& m);

// What the operator changes, in order, so that the owner mounts what the policy says.
std::vector<std::string> unowned_remedy(const policy::StoragePath& written, const UnownedMount& mount);

// The operator's remedy for a mount as the policy says whose handles the NAS no longer knows
// (ESTALE): its owner makes it anew, nothing in its configuration changes.
std::vector<std::string> stale_mount_remedy(const policy::StoragePath& written, const UnownedMount& mount);

}  // namespace pw::plan
