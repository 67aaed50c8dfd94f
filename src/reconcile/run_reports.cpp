// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/run_reports.hpp"

#include <variant>

#include "guest/fstab.hpp"
#include "journal/journal.hpp"
#include "journal/retention.hpp"
#include "reconcile/traffic_marks.hpp"
#include "report/history.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {
namespace {

// The fstab line of the mount point (its pathwarden comment left out); nullopt when none.
std::optional<std::string> fstab_line(const std::string& content, const std::string& mount_point) {
  const auto file = guest::FstabFile::parse(content);
  const auto at = file.find_mount_point(mount_point);
  if (at.empty()) return std::nullopt;
  return file.lines()[at.front()].text;
}

}  // namespace

report::Change change_of(const plan::Step& step) {
  report::Change c;
  c.action = plan::to_string(step.kind());
  c.text = step.summary;
  c.disruptive = step.disruptive;
  struct Fill {
    report::Change& c;
    void operator()(const plan::SetNic& s) const {
      c.target = "VM " + std::to_string(s.vm.vmid) + " " + s.device;
      c.before = s.from;
      c.after = s.to;
    }
    void operator()(const plan::RestartVm& s) const { c.target = "VM " + std::to_string(s.vm.vmid); }
    void operator()(const plan::SetChannels& s) const {
      c.target = s.host + " " + s.interface + " combined channels";
      c.before = std::to_string(s.from);
      c.after = std::to_string(s.to);
    }
    void operator()(const plan::MoveTransport& s) const {
      c.target = s.host + " " + s.mount_point + " NFS client";
      c.before = s.from;
      c.after = s.to;
    }
    void operator()(const plan::ChangeFstab& s) const {
      c.target = s.host + " " + s.mount_point;
      c.before = fstab_line(s.old_content, s.mount_point);
      c.after = fstab_line(s.new_content, s.mount_point);
    }
    void operator()(const plan::ProvePath& s) const { c.target = s.host + " " + s.mount_point; }
  };
  std::visit(Fill{c}, step.action);
  return c;
}

report::RunReport new_report(const Context& ctx, report::RunMode mode, std::string plan_id) {
  report::RunReport r;
  r.run_id = journal::make_run_id(ctx.deps.clock);
  r.plan_id = std::move(plan_id);
  r.mode = mode;
  r.started_at = journal::format_utc(ctx.deps.clock.now());
  r.policies_revision = ctx.options.policies_revision;
  r.policies_dirty = ctx.options.policies_dirty;
  return r;
}

report::PolicyReport new_entry(const plan::PolicyPlan& p) {
  report::PolicyReport pr;
  pr.policy = p.policy;
  pr.source = p.source;
  pr.node = p.vm.node;
  pr.vmid = p.vm.vmid;
  pr.host = p.host;
  pr.nas = p.nas;
  pr.observed_via = p.observed_via;
  if (!p.agent_unused.empty()) pr.agent_unused = p.agent_unused;
  return pr;
}

report::PolicyReport& report_of(report::RunReport& r, const plan::PolicyPlan& p) {
  for (auto& existing : r.policies) {
    if (existing.policy == p.policy) return existing;
  }
  r.policies.push_back(new_entry(p));
  return r.policies.back();
}

void remember_results(const Context& ctx, const report::RunReport& r) {
  for (const auto& p : r.policies) {
    journal::PolicyResult res;
    res.policy = p.policy;
    res.verdict = std::string(report::to_string(p.verdict));
    res.finished_at = r.finished_at;
    res.run_id = r.run_id;
    report::RunReport single;
    single.policies.push_back(p);
    res.details = report::to_json(single).as_object()["policies"].as_array()[0].as_object();
    // A run that read no counters of the path (a change, a verify, a recover) keeps the last
    // mark: the next run compares with it, and its own identity checks (4-tuples, the QEMU
    // process, the netN line) say "no comparison" where the path was made anew since. A run
    // that probed nothing keeps the last probe: its textfile series stay (report::StoredFigures).
    if (p.traffic_mark) res.details[kTrafficMarkKey] = to_json(*p.traffic_mark);
    if (p.verification && !p.verification->interfaces.empty()) {
      if (const auto* v = res.details.if_contains("verification")) res.details[report::kLastProbeKey] = *v;
    }
    static constexpr std::string_view kCarried[] = {kTrafficMarkKey, report::kLastProbeKey};
    if (auto st = journal::record_result(ctx.deps.results, res,
                                         report::to_json(report::history_point(p, r.finished_at, r.run_id)),
                                         journal::kHistoryRuns, kCarried);
        !st) {
      // The run's outcome stands; only `status` will not show it.
      ctx.warn(p.policy, "could not store the result: " + st.error().to_string());
    }
  }
  const auto pruned = journal::prune_finished(ctx.deps.journals, ctx.options.retention, ctx.deps.clock);
  for (const auto& e : pruned.errors) ctx.warn("", "could not remove a finished journal: " + e.to_string());
}

}  // namespace pw::reconcile
