// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The planner: a pure function of desired state (policies) × observed state (Proxmox and guest)
// × the clock. No I/O, so every decision is unit-testable from plain structs.
#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "guest/facts.hpp"
#include "plan/model.hpp"
#include "policy/model.hpp"
#include "proxmox/types.hpp"

namespace pw::plan {

// What Proxmox said about a policy's VM, read in one pass.
struct ObservedVm {
  proxmox::VmConfig config;  // current=1: the values in effect, with the file's digest
  proxmox::PendingConfig pending;
  // The listing's status and lock; its pid and taps ("nics") from the node's VM list, read
  // alongside the config (reconcile/observer.cpp), or why there are none.
  proxmox::VmStatus status;
  std::string taps_unavailable;
};

// Everything observed for one policy; a failed read is kept as its error.
struct Observation {
  std::optional<ObservedVm> vm;
  std::optional<Error> vm_error;   // the VM is not what the policy says (missing, other node, LXC)
  std::optional<Error> api_error;  // the API did not answer (down, TLS, login, privilege): unobserved
  std::optional<guest::GuestFacts> guest;
  std::optional<Error> guest_error;   // the guest did not answer or report: unobserved
  std::vector<std::string> warnings;  // what the observation had to work around (a migrated VM)

  // "Could not observe" is never "drift": nothing is known about this policy's world.
  bool unobserved() const { return api_error.has_value() || guest_error.has_value(); }
};

struct PlanningContext {
  std::string plan_id;
  std::string created_at;
  // When the plan is made, and the controller's zone for restart windows that name none (nullptr:
  // UTC). A value, not a clock: the planner stays pure.
  std::chrono::system_clock::time_point now{};
  const date::time_zone* local_zone = nullptr;
  std::string backup_dir = "/var/backups/pathwarden";
};

PolicyPlan plan_policy(const policy::StoragePath& policy, const Observation& observed, const PlanningContext& ctx);

// A plan entry's header alone (policy, source, VM as the policy names it, host, NAS): what every
// report entry of the policy starts from, planned or only audited.
PolicyPlan plan_header(const policy::StoragePath& policy);

// observations[i] belongs to policies[i].
Plan make_plan(std::span<const policy::StoragePath> policies, std::span<const Observation> observations,
               const PlanningContext& ctx);

// Whether a VM's `hotplug` setting includes network (Proxmox default "network,disk,usb").
bool network_hotplug_enabled(const proxmox::VmConfig& config);

// The fstab entry a policy wants, as FstabFile::set_entry takes it.
guest::FstabEntrySpec desired_fstab_entry(const policy::StoragePath& policy);

// Whether an effective NFS version satisfies a pinned one ("4" accepts any 4.x).
bool nfs_version_matches(std::string_view wanted, std::string_view effective);

// The verify step's data for a policy whose NIC has this MAC (the planner's, and the audit's).
ProvePath verify_path_of(const policy::StoragePath& p, net::MacAddress intended_mac);
// The same for a policy as the guest resolved its NAS names (with_resolved_names), keeping the
// name `written` gave, on the VM where it runs now (a migrated one is followed).
ProvePath verify_path_of(const policy::StoragePath& resolved, const policy::StoragePath& written,
                         net::MacAddress intended_mac, const proxmox::VmRef& runs_on);

}  // namespace pw::plan
