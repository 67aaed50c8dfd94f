// SPDX-License-Identifier: GPL-3.0-or-later
// Planning the Proxmox NIC and the guest interface behind it: the NIC's queues (SetNic, or
// RestartVm when the change is pending until a restart) and the guest's channels (SetChannels),
// with what blocks them: a non-virtio NIC, restart not allowed or outside its window, pending
// changes that are not pathwarden's.
#include <optional>

#include "guest/interfaces.hpp"
#include "plan/planner_steps.hpp"
#include "proxmox/net_device.hpp"

namespace pw::plan::detail {
namespace {

std::string where(const policy::StoragePath& p, std::string_view field) {
  return " (" + std::string(field) + " at " + p.position_of(field).to_string() + ")";
}

// A queues change that re-plugs the NIC or needs a restart: blocked unless the policy allows it
// now, and a restart must not apply someone else's pending changes along with it.
void block_disruption(const policy::StoragePath& p, const PlanningContext& ctx, const std::string& change, bool hotplug,
                      bool needs_restart, const std::vector<std::string>& other_pending, PolicyPlan& out) {
  auto block = [&](std::string why) { out.blockers.push_back(std::move(why)); };
  if (!p.restart.allowed) {
    block(change + (hotplug ? " re-plugs the NIC in the running guest" : " needs a guest restart") +
          ", which the policy does not allow" + where(p, "spec.restart.allowed"));
  } else if (p.restart.window && !p.restart.window->contains(ctx.now, ctx.local_zone)) {
    block(change + " is disruptive and it is outside the restart window '" + p.restart.window->text + "' (it is " +
          p.restart.window->describe(ctx.now, ctx.local_zone) + ")" + where(p, "spec.restart.window"));
  }
  if (needs_restart && !other_pending.empty()) {
    block("a restart would also apply pending changes to " + join(other_pending, ", ") +
          " that are not pathwarden's; apply or revert them in Proxmox first");
  }
}

// The guest's combined channels follow the NIC's queues: set with the NIC's change, or raised
// when the NIC already has its queues but the guest uses fewer.
void plan_channels(const policy::StoragePath& p, const PlannedNic& nic, int want, PolicyPlan& out) {
  const guest::InterfaceInfo* iface = nic.iface;
  // Unknown is neither right nor wrong: a change cannot plan its channels step from it, and a
  // converged NIC's channels are said unchecked.
  if (iface->queues_unknown && want > 1) {
    const std::string why = iface->name + "'s channels in guest " + p.guest.host +
                            " are unknown (the guest agent's read access runs no ethtool)";
    if (nic.changes) {
      out.blockers.push_back(why + ", and the queues=" + std::to_string(want) +
                             " change needs them for its channels step; observe this guest with "
                             "spec.observe.agent_access: exec or over SSH");
    } else {
      out.notes.push_back(why + ": not checked against queues=" + std::to_string(want));
    }
    return;
  }
  const int channels = iface->combined_current().value_or(iface->rx_queues > 0 ? iface->rx_queues : 1);
  // The facts already say `ethtool -L` cannot work there: the step is not planned (it would re-plug
  // the Proxmox NIC, fail in the guest and roll back), the policy is blocked with what to change.
  if ((nic.changes || channels < want) && want > 1 && !iface->combined_max()) {
    out.blockers.push_back(
        iface->name + " in guest " + p.guest.host + " has no combined channels to set (" +
        (iface->channels ? std::string("ethtool -l says Combined: n/a, as for an e1000 or a veth")
                         : std::string("ethtool -l gave no channel parameters: ethtool is not installed there, or "
                                       "the driver has none")) +
        "), so queues=" + std::to_string(want) + " cannot take effect in the guest" + where(p, "spec.nic.queues") +
        "; give spec.nic.queues to a virtio NIC (multiqueue), install ethtool in the guest, or drop spec.nic.queues");
    return;
  }
  if (nic.changes) {
    out.steps.push_back({SetChannels{p.guest.host, nic.mac, iface->name, channels, want}, false,
                         "set " + iface->name + " combined channels to " + std::to_string(want) + " in the guest"});
  } else if (channels < want) {
    const int max = iface->combined_max().value_or(0);
    if (max >= want) {
      out.steps.push_back({SetChannels{p.guest.host, nic.mac, iface->name, channels, want}, false,
                           "set " + iface->name + " combined channels " + std::to_string(channels) + " → " +
                               std::to_string(want) + " in the guest"});
    } else {
      out.notes.push_back(iface->name + " offers " + std::to_string(max) + " channels although " + p.nic.device +
                          " has queues=" + std::to_string(want) + " (the guest kernel or a pending change?)");
    }
  }
}

// spec.nic.queues: the NIC's queues in Proxmox, then the guest's channels. Sets nic.changes.
void plan_queues(const policy::StoragePath& p, const ObservedVm& vm, const std::string& nic_value,
                 const proxmox::NetDeviceSpec& spec, const PlanningContext& ctx, PlannedNic& nic, PolicyPlan& out) {
  auto block = [&](std::string why) { out.blockers.push_back(std::move(why)); };
  const bool running = vm.status.status == "running";
  const bool hotplug = network_hotplug_enabled(vm.config);
  const int want = *p.nic.queues;
  if (spec.model() != "virtio" && want > 1) {
    block(p.nic.device + " is a " + spec.model() + " NIC; queues only take effect on virtio" +
          where(p, "spec.nic.queues"));
  }
  const int have = spec.effective_queues();
  const proxmox::PendingItem* pend = vm.pending.find(p.nic.device);
  std::vector<std::string> other_pending;
  for (const auto& key : vm.pending.changed_keys()) {
    if (key != p.nic.device) other_pending.push_back(key);
  }
  bool needs_restart = false;
  std::optional<SetNic> set;
  if (pend != nullptr && pend->pending) {
    auto pending_spec = proxmox::NetDeviceSpec::parse(*pend->pending);
    auto without_queues = [](proxmox::NetDeviceSpec s) {
      (void)s.erase("queues");
      return s.canonical();
    };
    if (pending_spec && pending_spec->effective_queues() == want &&
        without_queues(*pending_spec) == without_queues(spec)) {
      needs_restart = true;  // our change is already pending: only the restart is missing
      out.notes.push_back(p.nic.device + " queues=" + std::to_string(want) + " is already pending in Proxmox");
    } else {
      block(p.nic.device + " has a pending change that is not pathwarden's (" + *pend->pending +
            "); apply or revert it in Proxmox first");
    }
  } else if (have != want) {
    proxmox::NetDeviceSpec to = spec;
    if (auto st = to.set("queues", std::to_string(want)); !st) {
      block(st.error().to_string());
    } else {
      set = SetNic{vm.config.ref,
                   p.nic.device,
                   nic_value,
                   to.to_string(),
                   vm.config.digest,
                   running && hotplug,
                   spec.queues(),
                   want,
                   p.restart.window ? p.restart.window->text : std::string()};
      needs_restart = !(running && hotplug);
    }
  }
  if (set || needs_restart) {
    nic.changes = true;
    const std::string change = p.nic.device + " queues " + std::to_string(have) + " → " + std::to_string(want);
    block_disruption(p, ctx, change, set && set->hotplug, needs_restart, other_pending, out);
  }
  if (set) {
    out.steps.push_back({*set, true,
                         "set " + p.nic.device + " queues " + std::to_string(have) + " → " + std::to_string(want) +
                             (set->hotplug ? " (hot-plug: the NIC is re-plugged)" : " (pending until restart)")});
  }
  if (needs_restart) {
    out.steps.push_back(
        {RestartVm{vm.config.ref, p.guest.host, "apply pending " + p.nic.device + " queues=" + std::to_string(want),
                   p.restart.window ? p.restart.window->text : std::string()},
         true,
         "reboot VM " + std::to_string(p.guest.vmid) + " through Proxmox to apply " + p.nic.device +
             " queues=" + std::to_string(want)});
  }
  plan_channels(p, nic, want, out);
}

}  // namespace

std::optional<PlannedNic> plan_nic(const policy::StoragePath& p, const ObservedVm& vm, const guest::GuestFacts& facts,
                                   const PlanningContext& ctx, PolicyPlan& out) {
  auto block = [&](std::string why) { out.blockers.push_back(std::move(why)); };
  const auto nic_value = vm.config.get(p.nic.device);
  if (!nic_value) {
    block("VM " + std::to_string(p.guest.vmid) + " has no " + p.nic.device + where(p, "spec.nic.device"));
    return std::nullopt;
  }
  auto spec = proxmox::NetDeviceSpec::parse(*nic_value);
  if (!spec) {
    block(p.nic.device + " of VM " + std::to_string(p.guest.vmid) + " cannot be read: " + spec.error().to_string());
    return std::nullopt;
  }
  PlannedNic nic;
  nic.mac = spec->mac() ? net::MacAddress(*spec->mac()) : net::MacAddress();
  nic.iface = nic.mac.empty() ? nullptr : guest::find_nic_interface(facts.interfaces, nic.mac);
  if (nic.iface == nullptr) {
    block("no interface in guest " + p.guest.host + " has " + p.nic.device + "'s MAC " + nic.mac +
          "; is the NIC attached and up inside the guest?");
    return std::nullopt;
  }
  if (p.nic.queues) plan_queues(p, vm, *nic_value, *spec, ctx, nic, out);
  check_mtu(p, *spec, nic, facts, out);
  return nic;
}

}  // namespace pw::plan::detail
