// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Before anything is changed: does the API identity hold the privileges the plan's steps need on
// the VMs they touch? Asked with GET /access/permissions (Proxmox works out propagation, pools
// and a token's privilege separation), one call per distinct path. A privilege missing blocks the
// policy (precondition-failed, its steps dropped) with the `pveum` command that grants it, instead
// of a 403 in the middle of a change. A permissions call that fails leaves the checks to Proxmox
// at each write, with a note: preflight never replaces them.
//
// Needed (qemu-server PVE/API2/Qemu.pm, read at e6352be6): a netN write VM.Config.Network on
// /vms/ID (`$check_vm_modify_config_perm`) and SDN.Use on the bridge, /sdn/zones/ZONE/BRIDGE
// [/TAG], or per trunk VLAN, for the new value and the one it replaces (pve-guest-common
// GuestHelpers.pm `check_vnet_access`; ZONE is an SDN VNet's zone, from GET /cluster/sdn/vnets,
// else localnetwork); a reboot VM.PowerMgmt on /vms/ID, and (not blocking) Sys.Audit on
// /nodes/NODE to read the start task that brings the VM back.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/model.hpp"
#include "reconcile/context.hpp"

namespace pw::reconcile {

class Preflight {
 public:
  explicit Preflight(const Context& ctx) : ctx_(ctx) {}

  // Every policy of the plan, with one query per distinct path for all of them.
  void check(plan::Plan& plan);
  // One policy (a check-mode run streams its plans).
  void check(plan::PolicyPlan& p);

  struct Need {
    std::string path;
    std::string privilege;
    std::string why;       // "set net1 queues 1 → 8"
    bool blocking = true;  // false: asked, and a note when missing (trunks)
  };
  // `zones`: SDN VNet -> zone (GET /cluster/sdn/vnets); a bridge not in it is in localnetwork.
  static std::vector<Need> needs(const plan::PolicyPlan& p, const std::map<std::string, std::string>& zones = {});

 private:
  // The VNet zones, asked once and only when a plan has a NIC step.
  const std::map<std::string, std::string>& zones(const plan::PolicyPlan& p);
  void ask(const std::vector<Need>& needs);
  std::string grant_command(const std::string& path) const;

  const Context& ctx_;
  std::map<std::string, proxmox::ApiResult<std::set<std::string>>> known_;
  std::optional<std::map<std::string, std::string>> zones_;
  std::string zones_error_;
};

}  // namespace pw::reconcile
