#include "reconcile/preflight.hpp"

#include "proxmox/net_device.hpp"

namespace pw::reconcile {
namespace {

// The SDN.Use paths of one netN value: /sdn/zones/localnetwork/BRIDGE[/TAG], and whether it has
// trunks (checked per VLAN by Proxmox).
void bridge_needs(const std::string& value, const std::string& why, std::vector<Preflight::Need>& out) {
  auto spec = proxmox::NetDeviceSpec::parse(value);
  if (!spec) return;
  const auto bridge = spec->bridge();
  if (!bridge || bridge->empty()) return;
  const std::string base = "/sdn/zones/localnetwork/" + *bridge;
  const auto tag = spec->get("tag");
  const auto trunks = spec->get("trunks");
  if (tag) out.push_back({base + "/" + *tag, "SDN.Use", why, true});
  if (trunks) out.push_back({base, "SDN.Use", why + " (trunks " + *trunks + ": Proxmox checks each VLAN)", false});
  if (!tag && !trunks) out.push_back({base, "SDN.Use", why, true});
}

}  // namespace

std::vector<Preflight::Need> Preflight::needs(const plan::PolicyPlan& p) {
  std::vector<Need> out;
  for (const auto& s : p.steps) {
    if (const auto* nic = std::get_if<plan::SetNic>(&s.action)) {
      const std::string vm = "/vms/" + std::to_string(nic->vm.vmid);
      out.push_back({vm, "VM.Config.Network", s.summary, true});
      bridge_needs(nic->to, s.summary, out);
      if (nic->from != nic->to) bridge_needs(nic->from, s.summary + " (the value it replaces)", out);
    } else if (const auto* rs = std::get_if<plan::RestartVm>(&s.action)) {
      out.push_back({"/vms/" + std::to_string(rs->vm.vmid), "VM.PowerMgmt", s.summary, true});
    }
  }
  return out;
}

void Preflight::ask(const std::vector<Need>& needs) {
  std::vector<std::string> paths;
  for (const auto& n : needs) {
    if (!known_.contains(n.path) && std::find(paths.begin(), paths.end(), n.path) == paths.end()) {
      paths.push_back(n.path);
    }
  }
  if (paths.empty()) return;
  auto answers = ctx_.d.api.privileges(paths);
  for (std::size_t i = 0; i < paths.size() && i < answers.size(); ++i) known_.emplace(paths[i], std::move(answers[i]));
}

std::string Preflight::grant_command(const std::string& path) const {
  const std::string& id = ctx_.o.api_identity;
  if (id.find('!') != std::string::npos) {
    const std::string user = id.substr(0, id.find('!'));
    return "pveum acl modify " + path + " --roles PathwardenOperator --tokens '" + id +
           "' (and --users " + user + " for a token with privilege separation, which needs it on both)";
  }
  return "pveum acl modify " + path + " --roles PathwardenOperator --users " + (id.empty() ? "USER@REALM" : id);
}

void Preflight::check(plan::Plan& plan) {
  std::vector<Need> all;
  for (const auto& p : plan.policies) {
    if (p.state != plan::PolicyState::changes) continue;
    auto n = needs(p);
    all.insert(all.end(), n.begin(), n.end());
  }
  ask(all);
  for (auto& p : plan.policies) check(p);
}

void Preflight::check(plan::PolicyPlan& p) {
  if (p.state != plan::PolicyState::changes) return;
  const auto wanted = needs(p);
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
    const std::string who = ctx_.o.api_identity.empty() ? "the API identity" : ctx_.o.api_identity;
    if (!n.blocking) {
      p.notes.push_back(who + " has no " + n.privilege + " on " + n.path + " for " + n.why);
      continue;
    }
    missing.push_back(who + " lacks " + n.privilege + " on " + n.path + ", needed to " + n.why +
                      "; grant it: " + grant_command(n.path) + " (the role: README, 'Minimal Proxmox role')");
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
