// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/audit.hpp"

#include "net/mac_address.hpp"
#include "plan/names.hpp"
#include "plan/planner.hpp"
#include "plan/unowned_mount.hpp"
#include "proxmox/net_device.hpp"
#include "reconcile/evidence.hpp"
#include "reconcile/measure.hpp"
#include "reconcile/observer.hpp"
#include "reconcile/run_reports.hpp"

namespace pw::reconcile {

// `verify`: observe, then the facts check or a probe of each policy's path. Long because it is
// the command's whole pass in the order it runs, as Engine::execute is for reconcile.
report::RunReport Audit::run(std::span<const policy::StoragePath> policies, bool probe) {
  auto rep = new_report(ctx_, report::RunMode::verify, "");
  auto observed = Observer(ctx_).observe(policies);
  std::vector<std::optional<plan::ProvePath>> paths(policies.size());
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = policies[i];
    auto pp = plan::plan_header(p);
    const auto& o = observed[i];
    if (o.vm) pp.vm = o.vm->config.ref;
    auto& pr = report_of(rep, pp);
    pr.warnings.insert(pr.warnings.end(), o.warnings.begin(), o.warnings.end());
    if (o.unobserved() || o.vm_error || !o.vm || !o.guest) {
      pr.verdict = o.unobserved() ? report::Verdict::unobserved : report::Verdict::precondition_failed;
      if (o.api_error) pr.errors.push_back(o.api_error->to_string());
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
    auto named = plan::with_resolved_names(p, *o.guest);
    if (!named) {
      pr.verdict = report::Verdict::precondition_failed;
      pr.errors.push_back(named.error().to_string());
      continue;
    }
    if (!p.mount.owned()) {
      // Docker's, systemd's or autofs's mount: proven where its owner mounts it.
      auto located = plan::locate_unowned_mount(p, *named, *o.guest);
      if (!located) {
        pr.verdict = report::Verdict::precondition_failed;
        pr.errors.push_back(located.error().to_string());
        continue;
      }
      named->mount.path = located->path;
      if (!located->configured.empty())
        pr.notes.push_back(p.mount.display() + " is configured with " + located->configured);
      // The audit proves the path as it is; how the owner's configuration differs is a warning,
      // and the remedy is the one `plan`/`reconcile --check` give for the same drift.
      for (const auto& d : located->differences)
        pr.warnings.push_back(p.mount.display() + " " + d + " (its owner's configuration)");
      if (!located->differences.empty()) pr.remedy = plan::unowned_remedy(p, *located);
    }
    const plan::ProvePath v = plan::verify_path_of(*named, p, net::MacAddress(*spec->mac()), o.vm->config.ref);
    if (!probe) {
      auto r = verify::verify_path(audit_input(v, *o.guest));
      pr.verification = verification_report(r, v, 0, 0);
      pr.verdict = verdict_of(r.verdict);
    }
    paths[i] = v;
  }
  if (probe) {
    std::vector<MeasureRequest> requests;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (!paths[i]) continue;
      requests.push_back({&*paths[i], policies[i].name});
      index.push_back(i);
    }
    const auto measured = measure(ctx_, requests);
    for (std::size_t k = 0; k < requests.size(); ++k) {
      auto& pr = rep.policies[index[k]];
      const auto& m = measured[k];
      for (const auto& n : m.notes) pr.notes.push_back(n);
      for (const auto& e : m.errors) pr.errors.push_back(e);
      if (!m.result) continue;
      pr.verification = verification_of(m, *requests[k].path);
      pr.verdict = verdict_of(m.result->verdict);
    }
  }
  rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
  // An audit is evidence too: `status` shows it.
  remember_results(ctx_, rep);
  return rep;
}

}  // namespace pw::reconcile
