// SPDX-License-Identifier: GPL-3.0-or-later
// spec.nic.mtu and the path MTU toward the NAS: the guest interface's MTU and the Proxmox NIC's
// mtu= against the policy's, and the facts' don't-fragment ping (guest/path_mtu.hpp). A mismatch
// is a blocker naming the remedy; pathwarden never sets an MTU itself: the NIC carries every flow
// of the guest, not only the NAS's, and every hop (guest, Proxmox NIC, bridge, switch, NAS) has to
// agree, which no single write here can make true.
#include <optional>

#include "guest/path_mtu.hpp"
#include "plan/planner_steps.hpp"
#include "proxmox/net_device.hpp"

namespace pw::plan::detail {
namespace {

std::string at(const policy::StoragePath& p) {
  return " (spec.nic.mtu at " + p.position_of("spec.nic.mtu").to_string() + ")";
}

// Where the guest gets its MTU from (qemu-server print_netdevice_full, docs/field-next-upstream.md
// §4.1): a virtio NIC's mtu=, or without one its bridge's at VM start on PVE 9.0.3 and later
// (mtu=1 on PVE 8); only at the VM's next start, never by hot-plug.
std::string proxmox_remedy(const policy::StoragePath& p, int want) {
  return "give " + p.nic.device +
         " the MTU in Proxmox (leave mtu unset or mtu=1 to follow the bridge on PVE 9.0.3+, "
         "mtu=1 on PVE 8, with the bridge at " +
         std::to_string(want) + " or more; or mtu=" + std::to_string(want) + ") and stop and start VM " +
         std::to_string(p.guest.vmid) +
         " through Proxmox (an MTU is read at VM start); the guest's own network configuration must not force "
         "another";
}

// The policy's MTU against what Proxmox gives the NIC and what the guest interface runs.
void check_wanted(const policy::StoragePath& p, const proxmox::NetDeviceSpec& spec, const PlannedNic& nic, int want,
                  PolicyPlan& out) {
  if (const auto set = spec.get("mtu"); set && *set != "1" && *set != std::to_string(want)) {
    out.blockers.push_back(p.nic.device + " of VM " + std::to_string(p.guest.vmid) + " has mtu=" + *set +
                           " in Proxmox, the policy asks " + std::to_string(want) + at(p) + ": " +
                           proxmox_remedy(p, want));
  }
  const guest::InterfaceInfo* iface = nic.iface;
  if (!iface->mtu) {
    out.notes.push_back(iface->name + "'s MTU in guest " + p.guest.host + " is unknown: not checked against " +
                        std::to_string(want));
  } else if (*iface->mtu != want) {
    out.blockers.push_back(iface->name + " in guest " + p.guest.host + " runs MTU " + std::to_string(*iface->mtu) +
                           ", the policy asks " + std::to_string(want) + at(p) + ": " + proxmox_remedy(p, want));
  }
}

// The facts' don't-fragment ping toward the policy's NAS.
void check_path(const policy::StoragePath& p, const guest::GuestFacts& facts, PolicyPlan& out) {
  const auto it = facts.path_mtu.find(p.mount.server);
  const std::optional<int> want = p.nic.mtu;
  if (it == facts.path_mtu.end()) {
    if (want)
      out.notes.push_back("the path MTU to " + p.mount.server + " was not measured (" +
                          (facts.channel == guest::FactsChannel::agent
                               ? std::string("the guest agent's read access runs no ping")
                               : std::string("no probe in the facts")) +
                          ")");
    return;
  }
  const guest::PathMtuProbe& probe = it->second;
  const guest::PathMtuFinding found = guest::classify_path_mtu(probe);
  const std::string toward =
      p.mount.server +
      (probe.address.empty() || probe.address == p.mount.server ? std::string() : " (" + probe.address + ")");
  const std::string mtu = std::to_string(found.mtu);
  using V = guest::PathMtuVerdict;
  switch (found.verdict) {
    case V::fits:
      if (want && probe.outcome == guest::PathMtuProbe::Outcome::probed)
        out.notes.push_back("a don't-fragment ping of MTU " + mtu + " crossed to " + toward + " over " +
                            probe.interface);
      break;
    case V::black_hole:
      out.blockers.push_back(
          "the path to " + toward + " drops packets of MTU " + mtu + " (" + probe.interface + "'s) without a word, " +
          "while 1500-byte ones cross: a hop between the guest and the NAS (a Proxmox bridge or port, a switch, " +
          "the NAS's interface) carries less, and NFS stalls on the first large read or write. Raise that hop to " +
          mtu + " (check with 'ping -M do -s " + std::to_string(probe.attempts.front().payload) + " " + probe.address +
          "' in the guest), or lower " + probe.interface + " to 1500");
      break;
    case V::smaller_hop: {
      const std::string hop = std::to_string(*found.hop_mtu);
      const std::string what = "a hop toward " + toward + " carries MTU " + hop + ", less than " + probe.interface +
                               "'s " + mtu + " (it answers 'fragmentation needed')";
      if (want && *want > *found.hop_mtu) {
        out.blockers.push_back(what + ", and the policy asks " + std::to_string(*want) + at(p) +
                               ": raise that hop, or the policy's MTU to what the path carries");
      } else {
        out.warnings.push_back(what +
                               ": the kernel's path-MTU discovery sends smaller segments, so NFS works with "
                               "fewer bytes per frame; raise the hop or lower the interface to " +
                               hop);
      }
      break;
    }
    case V::unanswered:
      out.notes.push_back(toward + " answered no ping, of MTU " + mtu +
                          " nor of 1500 (ICMP filtered, or the NAS down): the path MTU is not checked");
      break;
    case V::unknown:
      if (want)
        out.notes.push_back("the path MTU to " + toward + " was not measured (" +
                            (probe.outcome == guest::PathMtuProbe::Outcome::no_ping      ? "ping is not installed"
                             : probe.outcome == guest::PathMtuProbe::Outcome::unresolved ? "the name did not resolve"
                                                                                         : "no route") +
                            " in the guest)");
      break;
  }
}

}  // namespace

void check_mtu(const policy::StoragePath& p, const proxmox::NetDeviceSpec& spec, const PlannedNic& nic,
               const guest::GuestFacts& facts, PolicyPlan& out) {
  if (p.nic.mtu) check_wanted(p, spec, nic, *p.nic.mtu, out);
  check_path(p, facts, out);
}

}  // namespace pw::plan::detail
