// SPDX-License-Identifier: GPL-3.0-or-later
// The planner's entry points: plan_policy reads as the sequence of its concerns (what blocks a
// policy before anything, the NIC in nic_steps.cpp, the fstab entry and the mount in
// mount_steps.cpp, then the verify step and the final state), and the small public helpers the
// audit and the plan file share with it.
#include "plan/planner.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "plan/guest_writes.hpp"
#include "plan/planner_steps.hpp"
#include "policy/option_notes.hpp"
#include "proxmox/net_device.hpp"

namespace pw::plan {
namespace detail {

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

}  // namespace detail

namespace {

// What blocks a policy before anything: what could not be observed, a locked VM, a VM not
// running. false when the VM or the guest is not observed: nothing more can be planned.
bool plan_preconditions(const policy::StoragePath& p, const Observation& observed, PolicyPlan& out) {
  auto block = [&](std::string why) { out.blockers.push_back(std::move(why)); };
  if (observed.api_error)
    block("could not observe VM " + std::to_string(p.guest.vmid) + ": " + observed.api_error->to_string());
  if (observed.vm_error) block("Proxmox: " + observed.vm_error->to_string());
  if (observed.guest_error) block("could not observe guest " + p.guest.host + ": " + observed.guest_error->to_string());
  if (!observed.vm || !observed.guest) return false;
  const ObservedVm& vm = *observed.vm;
  if (!vm.status.lock.empty()) {
    block("VM " + std::to_string(p.guest.vmid) + " is locked (" + vm.status.lock +
          "); wait for the backup/migration to finish and run again");
  }
  if (vm.status.status != "running") {
    block("VM " + std::to_string(p.guest.vmid) + " is " +
          (vm.status.status.empty() ? "not running" : vm.status.status) +
          "; pathwarden only changes running guests and never starts a stopped one");
  }
  return true;
}

std::string percent(double share) {
  return std::to_string(std::lround(share * 100)) + "%";
}

std::string verify_summary(const ProvePath& v, const guest::InterfaceInfo& iface, const policy::StoragePath& p) {
  return "verify with byte counters: " + std::to_string(p.verify.probe_bytes >> 20) + " MiB " +
         (v.direction == verify::ProbeDirection::write ? "written to " : "read from ") + v.probe_file + " must cross " +
         iface.name + " (" + p.nic.device + ") for at least " + percent(p.verify.min_share);
}

// The verify step closes a plan that changes anything: `proven` is the policy as the guest
// resolved its NAS, at the path the mount is; `p` as written.
void plan_verify(const policy::StoragePath& proven, const policy::StoragePath& p, const detail::PlannedNic& nic,
                 const proxmox::VmRef& vm, PolicyPlan& out) {
  // Nothing on the path changes when the only step writes a comment (a mount adopted as it is).
  const bool path_changes = std::any_of(out.steps.begin(), out.steps.end(), [](const Step& s) {
    const auto* c = std::get_if<ChangeFstab>(&s.action);
    return c == nullptr || !c->activations.empty();
  });
  if (!path_changes) return;
  ProvePath v = verify_path_of(proven, p, nic.mac, vm);
  out.steps.push_back({v, false, verify_summary(v, *nic.iface, proven)});
}

// The plan's final state from what was planned.
// Whether a step runs in the guest as root (through become): the fstab write and re-mount, the
// channels, the transport move, and a probe that writes or reads as root.
bool needs_root(const std::vector<Step>& steps) {
  return std::any_of(steps.begin(), steps.end(), [](const Step& s) {
    if (const auto* v = std::get_if<ProvePath>(&s.action))
      return v->probe_as_root || v->direction == verify::ProbeDirection::write;
    return s.kind() == StepKind::change_fstab || s.kind() == StepKind::set_channels ||
           s.kind() == StepKind::move_transport;
  });
}

PolicyPlan finish(PolicyPlan& out, const Observation& observed) {
  if (observed.unobserved()) {
    out.state = PolicyState::unobserved;
    out.steps.clear();
    out.remedy.clear();
  } else if (out.state == PolicyState::drift) {
    out.steps.clear();  // drift of a mount not pathwarden's: the remedy is the operator's
  } else if (!out.blockers.empty()) {
    out.state = PolicyState::precondition_failed;
    out.steps.clear();
  } else {
    out.state = out.steps.empty() ? PolicyState::converged : PolicyState::changes;
  }
  if (out.state != PolicyState::converged) out.proof.reset();
  return out;
}

}  // namespace

bool network_hotplug_enabled(const proxmox::VmConfig& config) {
  // As qemu-server's parse_hotplug_features reads it: "0" none, "1" the default
  // (network,disk,usb), else a list split like pve-common's split_list: on ',', ';' and
  // whitespace, empty items dropped ("disk;network" has network).
  const auto value = config.get("hotplug").value_or("network,disk,usb");
  if (value == "0") return false;
  if (value == "1") return true;
  std::size_t i = 0;
  auto separator = [](char c) { return c == ',' || c == ';' || std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (i < value.size()) {
    while (i < value.size() && separator(value[i])) ++i;
    std::size_t j = i;
    while (j < value.size() && !separator(value[j])) ++j;
    if (std::string_view(value).substr(i, j - i) == "network") return true;
    i = j;
  }
  return false;
}

bool nfs_version_matches(std::string_view wanted, std::string_view effective) {
  if (wanted == effective) return true;
  if (wanted == "4") return effective.starts_with("4");
  if (wanted == "4.0") return effective == "4";
  return false;
}

guest::FstabEntrySpec desired_fstab_entry(const policy::StoragePath& p) {
  guest::FstabEntrySpec spec;
  const bool v6 = p.mount.server.find(':') != std::string::npos;
  spec.spec = (v6 ? "[" + p.mount.server + "]" : p.mount.server) + ":" + p.mount.export_path;
  spec.file = p.mount.path;
  spec.vfstype = "nfs";  // mount.nfs picks v3 or v4 from vers=; "nfs4" would refuse vers=3
  for (const auto& o : p.mount.options) spec.options.push_back(o.to_string());
  return spec;
}

PolicyPlan plan_header(const policy::StoragePath& p) {
  PolicyPlan out;
  out.policy = p.name;
  out.source = p.source.to_string();
  out.vm = proxmox::VmRef{p.guest.node, p.guest.vmid};
  out.host = p.guest.host;
  out.nas = p.mount.server;
  return out;
}

PolicyPlan plan_policy(const policy::StoragePath& p, const Observation& observed, const PlanningContext& ctx) {
  PolicyPlan out = plan_header(p);
  if (observed.vm) out.vm = observed.vm->config.ref;
  out.warnings = observed.warnings;
  for (auto& note : policy::option_notes(p.mount)) out.warnings.push_back(std::move(note.message));
  if (observed.guest) {
    out.observed_via = observed.guest->channel;
    out.agent_unused = observed.guest->agent_unused;
    // spec.observe.via: auto read this guest over SSH: why, where the text report shows it too.
    if (!out.agent_unused.empty())
      out.notes.push_back("read over SSH, not through the guest agent: " + out.agent_unused);
  }

  if (!plan_preconditions(p, observed, out)) return finish(out, observed);
  const ObservedVm& vm = *observed.vm;
  const guest::GuestFacts& facts = *observed.guest;
  const auto nic = detail::plan_nic(p, vm, facts, ctx, out);
  if (!nic) return finish(out, observed);
  const auto proven = detail::plan_mount(p, facts, nic->changes, ctx, out);
  if (!proven) return finish(out, observed);
  plan_verify(*proven, p, *nic, vm.config.ref, out);
  if (facts.sudo && !facts.sudo->usable() && needs_root(out.steps))
    out.blockers.push_back(facts.sudo->blocker(p.guest.host));
  if (out.steps.empty() && out.blockers.empty() && out.state != PolicyState::drift) {
    out.proof = verify_path_of(*proven, p, nic->mac, vm.config.ref);
  }
  return finish(out, observed);
}

ProvePath verify_path_of(const policy::StoragePath& p, net::MacAddress intended_mac) {
  ProvePath v;
  v.vm = {p.guest.node, p.guest.vmid};
  v.nic = proxmox::net_index(p.nic.device);
  v.host = p.guest.host;
  v.mount_point = p.mount.path;
  v.intended_mac = std::move(intended_mac);
  v.server = p.mount.server;
  v.nas_addresses = p.mount.nas_addresses;
  v.vers = p.mount.nfs_version();
  v.nconnect = p.mount.nconnect();
  v.queues = p.nic.queues;
  v.probe_file = p.mount.path + "/" + p.verify.probe_file;
  v.probe_bytes = p.verify.probe_bytes;
  v.max_probe_bytes = p.verify.max_probe_bytes;
  v.min_share = p.verify.min_share;
  v.direction = p.verify.direction;
  v.probe_as_root = p.verify.probe_as_root;
  v.baseline_ms = static_cast<int>(p.verify.baseline.count());
  v.commit_cycles = p.verify.commit_cycles;
  v.min_commit_rate = p.verify.min_commit_rate;
  v.rollback_on_inconclusive = p.rollback.on_inconclusive;
  v.verify_restored = p.rollback.verify_restored;
  return v;
}

ProvePath verify_path_of(const policy::StoragePath& resolved, const policy::StoragePath& written,
                         net::MacAddress intended_mac, const proxmox::VmRef& runs_on) {
  ProvePath v = verify_path_of(resolved, std::move(intended_mac));
  v.vm = runs_on;
  if (resolved.mount.server != written.mount.server) v.server_name = written.mount.server;
  return v;
}

Plan make_plan(std::span<const policy::StoragePath> policies, std::span<const Observation> observations,
               const PlanningContext& ctx) {
  Plan plan;
  plan.id = ctx.plan_id;
  plan.created_at = ctx.created_at;
  for (std::size_t i = 0; i < policies.size() && i < observations.size(); ++i) {
    plan.policies.push_back(plan_policy(policies[i], observations[i], ctx));
  }
  merge_guest_writes(plan.policies);
  return plan;
}

}  // namespace pw::plan
