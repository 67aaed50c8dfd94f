// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to pw_plan: the concerns plan_policy (planner.cpp) runs one after the other, each
// appending its steps, blockers, notes and warnings to the PolicyPlan being built: the NIC
// (nic_steps.cpp), then the fstab entry and the mount (mount_steps.cpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "guest/facts.hpp"
#include "net/mac_address.hpp"
#include "plan/planner.hpp"
#include "proxmox/net_device.hpp"

namespace pw::plan::detail {

std::string join(const std::vector<std::string>& parts, std::string_view sep);

// What planning the NIC found, for the mount and the verify step after it.
struct PlannedNic {
  net::MacAddress mac;                          // the Proxmox NIC's
  const guest::InterfaceInfo* iface = nullptr;  // the guest interface with that MAC
  bool changes = false;                         // SetNic or RestartVm planned: the mount is re-made after them
};

// The Proxmox NIC's queues and the guest's channels: SetNic, RestartVm and SetChannels, and what
// blocks them (restart allowed, restart window, pending changes not pathwarden's). nullopt, with
// a blocker, when the NIC or its interface in the guest is not found: the plan ends there.
std::optional<PlannedNic> plan_nic(const policy::StoragePath& p, const ObservedVm& vm, const guest::GuestFacts& facts,
                                   const PlanningContext& ctx, PolicyPlan& out);

// spec.nic.mtu against the Proxmox NIC's mtu= and the guest interface, and the path MTU toward
// the NAS that the facts measured (mtu_checks.cpp): a mismatch or a black hole is a blocker
// naming the remedy; pathwarden never sets an MTU.
void check_mtu(const policy::StoragePath& p, const proxmox::NetDeviceSpec& spec, const PlannedNic& nic,
               const guest::GuestFacts& facts, PolicyPlan& out);

// The fstab entry and the mount (ChangeFstab, or for a mount pathwarden does not own, the
// comparison and on drift the remedy). Returns the policy the verify step proves (the NAS as the
// guest resolved it, at the path it is mounted), or nullopt when the plan ends as it stands.
std::optional<policy::StoragePath> plan_mount(const policy::StoragePath& p, const guest::GuestFacts& facts,
                                              bool nic_changes, const PlanningContext& ctx, PolicyPlan& out);

// spec.mount.trunking for a mount pathwarden owns (trunking_steps.cpp): under move-transport,
// the address of the NFS client to move the policy's server onto and the fstab entries of
// `fstab` pointed at that server; under refuse, a blocker when trunking is seen or foreseen.
// nullopt, with blockers in `out`, when the plan ends there.
struct TrunkingChoice {
  std::optional<std::string> move_from;    // the client's address to move away from; none: no move
  std::vector<std::string> moved_entries;  // other entries of `fstab` now naming the policy's server
};
std::optional<TrunkingChoice> plan_trunking(const policy::StoragePath& p, const policy::StoragePath& q,
                                            const guest::GuestFacts& facts, const guest::MountInfo* current,
                                            guest::FstabFile& fstab, PolicyPlan& out);

}  // namespace pw::plan::detail
