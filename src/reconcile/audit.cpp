#include "reconcile/audit.hpp"

#include "net/mac_address.hpp"
#include "plan/guest_requests.hpp"
#include "proxmox/net_device.hpp"
#include "plan/planner.hpp"
#include "reconcile/evidence.hpp"
#include "reconcile/observer.hpp"
#include "reconcile/run_reports.hpp"

namespace pw::reconcile {

report::RunReport Audit::run(std::span<const policy::StoragePath> policies, bool probe) {
  auto rep = new_report(ctx_, report::RunMode::verify, "");
  auto observed = Observer(ctx_).observe(policies);
  std::vector<guest::ProbeRequest> probes;
  std::vector<std::optional<plan::VerifyPath>> paths(policies.size());
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = policies[i];
    plan::PolicyPlan pp;
    pp.policy = p.name;
    pp.source = p.source.to_string();
    pp.vm = {p.guest.node, p.guest.vmid};
    pp.host = p.guest.host;
    auto& pr = report_of(rep, pp);
    const auto& o = observed[i];
    if (o.vm_error || o.guest_error || !o.vm || !o.guest) {
      pr.verdict = report::Verdict::precondition_failed;
      if (o.vm_error) pr.errors.push_back(o.vm_error->to_string());
      if (o.guest_error) pr.errors.push_back(o.guest_error->to_string());
      continue;
    }
    auto nic = o.vm->config.get(p.nic.device);
    auto spec = nic ? proxmox::NetDeviceSpec::parse(*nic) : Result<proxmox::NetDeviceSpec>(std::unexpected(Error{}));
    if (!spec || !spec->mac()) {
      pr.verdict = report::Verdict::precondition_failed;
      pr.errors.push_back("VM " + std::to_string(p.guest.vmid) + " has no usable " + p.nic.device);
      continue;
    }
    const plan::VerifyPath v = plan::verify_path_of(p, net::MacAddress(*spec->mac()));
    if (probe) {
      probes.push_back(plan::probe_request(v, v.probe_bytes));
    } else {
      auto r = verify::verify_path(audit_input(v, *o.guest));
      pr.verification = verification_report(r, v, 0, 0);
      pr.verdict = verdict_of(r.verdict);
    }
    paths[i] = v;
  }
  if (probe && !probes.empty()) {
    auto outcomes = ctx_.d.guests.probe(probes);
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (!paths[i]) continue;
      auto& pr = rep.policies[i];
      auto it = outcomes.find(paths[i]->host);
      if (it == outcomes.end() || !it->second) {
        pr.verdict = report::Verdict::inconclusive;
        pr.errors.push_back("probe: " + (it == outcomes.end() ? std::string("no result") : describe(it->second.error())));
        continue;
      }
      auto r = verify::verify_path(probe_input(*paths[i], *it->second));
      pr.verification = verification_report(r, *paths[i], paths[i]->probe_bytes, 1);
      pr.verdict = verdict_of(r.verdict);
    }
  }
  rep.finished_at = journal::format_utc(ctx_.d.clock.now());
  // An audit is evidence too: `status` shows it.
  remember_results(ctx_, rep);
  return rep;
}

}  // namespace pw::reconcile
