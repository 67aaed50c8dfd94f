// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/preflight.hpp"

#include <algorithm>
#include <set>

#include "proxmox/net_device.hpp"

namespace pw::reconcile {
namespace {

// Proxmox checks each trunk VLAN's path; past this many, preflight asks for the bridge alone and
// only notes it (a trunk of 1-4094 would be 4094 questions).
constexpr int kMaxTrunkPaths = 32;

// The VLAN ids of a trunks value, as pve-guest-common GuestHelpers.pm get_tags_from_trunk reads
// it: ';'-separated ids and ranges, a range expanded when it ascends.
std::vector<std::string> trunk_vlans(const std::string& trunks) {
  std::set<std::string> tags;
  std::size_t start = 0;
  while (start <= trunks.size()) {
    const std::size_t semi = std::min(trunks.find(';', start), trunks.size());
    const std::string part = trunks.substr(start, semi - start);
    start = semi + 1;
    const std::size_t dash = part.find('-');
    const std::string first = part.substr(0, dash);
    long a = 0, b = 0;
    try {
      a = std::stol(first);
      b = dash == std::string::npos ? 0 : std::stol(part.substr(dash + 1));
    } catch (...) {
      if (!first.empty()) tags.insert(first);
      continue;
    }
    if (b > a && b - a < 4096) {
      for (long t = a; t <= b; ++t) tags.insert(std::to_string(t));
    } else {
      tags.insert(first);
    }
  }
  return {tags.begin(), tags.end()};
}

// The SDN.Use paths Proxmox checks for one netN value (GuestHelpers.pm check_vnet_access):
// /sdn/zones/ZONE/BRIDGE/TAG when tagged, one such path per trunk VLAN, the bridge's path
// otherwise. ZONE is the bridge's SDN zone when it is a VNet, localnetwork for a Linux bridge.
void bridge_needs(const std::string& value, const std::string& why, const std::map<std::string, std::string>& zones,
                  std::vector<Preflight::Need>& out) {
  auto spec = proxmox::NetDeviceSpec::parse(value);
  if (!spec) return;
  const auto bridge = spec->bridge();
  if (!bridge || bridge->empty()) return;
  auto zone = zones.find(*bridge);
  const std::string base =
      "/sdn/zones/" + (zone == zones.end() ? std::string("localnetwork") : zone->second) + "/" + *bridge;
  const auto tag = spec->get("tag");
  const auto trunks = spec->get("trunks");
  if (tag) out.push_back({base + "/" + *tag, "SDN.Use", why, true});
  if (trunks) {
    const auto vlans = trunk_vlans(*trunks);
    if (static_cast<int>(vlans.size()) > kMaxTrunkPaths) {
      out.push_back(
          {base, "SDN.Use",
           why + " (trunks " + *trunks + ": Proxmox checks each of its " + std::to_string(vlans.size()) + " VLANs)",
           false});
    } else {
      for (const auto& v : vlans) out.push_back({base + "/" + v, "SDN.Use", why + " (trunk VLAN " + v + ")", true});
    }
  }
  if (!tag && !trunks) out.push_back({base, "SDN.Use", why, true});
}

}  // namespace

std::vector<Preflight::Need> Preflight::needs(const plan::PolicyPlan& p,
                                              const std::map<std::string, std::string>& zones) {
  std::vector<Need> out;
  for (const auto& s : p.steps) {
    if (const auto* nic = std::get_if<plan::SetNic>(&s.action)) {
      const std::string vm = "/vms/" + std::to_string(nic->vm.vmid);
      out.push_back({vm, "VM.Config.Network", s.summary, true});
      bridge_needs(nic->to, s.summary, zones, out);
      if (nic->from != nic->to) bridge_needs(nic->from, s.summary + " (the value it replaces)", zones, out);
    } else if (const auto* rs = std::get_if<plan::RestartVm>(&s.action)) {
      out.push_back({"/vms/" + std::to_string(rs->vm.vmid), "VM.PowerMgmt", s.summary, true});
      // Not needed to reboot; needed to see the root@pam start task that brings the VM back, so
      // a failed start is reported with its reason instead of as a timeout.
      out.push_back({"/nodes/" + rs->vm.node, "Sys.Audit",
                     s.summary + " (to read why, should the VM not start again: the node's task list)", false});
    }
  }
  return out;
}

const std::map<std::string, std::string>& Preflight::zones(const plan::PolicyPlan& p) {
  const bool has_nic =
      std::ranges::any_of(p.steps, [](const plan::Step& s) { return std::holds_alternative<plan::SetNic>(s.action); });
  if (has_nic && !zones_) {
    auto z = ctx_.deps.api.sdn_vnet_zones();
    if (z) {
      zones_ = std::move(*z);
    } else {
      zones_.emplace();
      // 404/501: a node without the SDN API; every bridge is then a Linux bridge.
      if (z.error().http_status != 404 && z.error().http_status != 501) zones_error_ = z.error().message;
    }
  }
  static const std::map<std::string, std::string> kNone;
  return zones_ ? *zones_ : kNone;
}

void Preflight::ask(const std::vector<Need>& needs) {
  std::vector<std::string> paths;
  for (const auto& n : needs) {
    if (!known_.contains(n.path) && std::find(paths.begin(), paths.end(), n.path) == paths.end()) {
      paths.push_back(n.path);
    }
  }
  if (paths.empty()) return;
  auto answers = ctx_.deps.api.privileges(paths);
  for (std::size_t i = 0; i < paths.size() && i < answers.size(); ++i) known_.emplace(paths[i], std::move(answers[i]));
}

std::string Preflight::grant_command(const std::string& path) const {
  const std::string& id = ctx_.options.api_identity;
  if (id.find('!') != std::string::npos) {
    const std::string user = id.substr(0, id.find('!'));
    return "pveum acl modify " + path + " --roles PathwardenOperator --tokens '" + id + "' (and --users " + user +
           " for a token with privilege separation, which needs it on both)";
  }
  return "pveum acl modify " + path + " --roles PathwardenOperator --users " + (id.empty() ? "USER@REALM" : id);
}

void Preflight::check(plan::Plan& plan) {
  std::vector<Need> all;
  for (const auto& p : plan.policies) {
    if (p.state != plan::PolicyState::changes) continue;
    auto n = needs(p, zones(p));
    all.insert(all.end(), n.begin(), n.end());
  }
  ask(all);
  for (auto& p : plan.policies) check(p);
}

void Preflight::check(plan::PolicyPlan& p) {
  if (p.state != plan::PolicyState::changes) return;
  const auto wanted = needs(p, zones(p));
  ask(wanted);
  std::vector<std::string> missing;
  std::string unchecked;
  for (const auto& n : wanted) {
    const auto& known = known_.at(n.path);
    if (!known) {
      unchecked = known.error().message;
      continue;
    }
    if (known->contains(n.privilege)) continue;
    const std::string who = ctx_.options.api_identity.empty() ? "the API identity" : ctx_.options.api_identity;
    if (!n.blocking) {
      p.notes.push_back(who + " has no " + n.privilege + " on " + n.path + " for " + n.why);
      continue;
    }
    std::string m = who + " lacks " + n.privilege + " on " + n.path + ", needed to " + n.why +
                    "; grant it: " + grant_command(n.path) + " (the role: README, 'Minimal Proxmox role')";
    if (n.path.starts_with("/sdn/zones/localnetwork/")) {
      m += "; if the bridge is an SDN VNet, its zone was not visible to this identity: grant SDN.Audit on "
           "/sdn/zones/ZONE/VNET so pathwarden asks for the right path";
    }
    missing.push_back(std::move(m));
  }
  if (!zones_error_.empty()) {
    p.notes.push_back("the SDN VNets could not be listed (GET /cluster/sdn/vnets: " + zones_error_ +
                      "); every bridge was taken to be a Linux bridge (zone localnetwork)");
  }
  if (!unchecked.empty()) {
    p.notes.push_back("the privileges were not checked beforehand (GET /access/permissions: " + unchecked +
                      "); Proxmox checks them at each write");
  }
  if (missing.empty()) return;
  for (auto& m : missing) p.blockers.push_back(std::move(m));
  p.steps.clear();
  p.state = plan::PolicyState::precondition_failed;
}

}  // namespace pw::reconcile
