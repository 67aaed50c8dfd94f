#include "reconcile/recovery.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "journal/journal.hpp"
#include "journal/replay.hpp"
#include "reconcile/policy_run.hpp"
#include "reconcile/rollback.hpp"
#include "reconcile/run_reports.hpp"

namespace pw::reconcile {
namespace json = boost::json;

report::RunReport Recovery::run() {
  auto rep = new_report(ctx_, report::RunMode::recover, "");
  auto scan = journal::scan_journals(ctx_.deps.journals);
  for (const auto& bad : scan.unreadable) {
    report::PolicyReport pr;
    pr.policy = "(journal)";
    pr.verdict = report::Verdict::rollback_failed;
    pr.errors.push_back(bad.to_string() + "; inspect it by hand, then remove it");
    rep.policies.push_back(std::move(pr));
    rep.journal_left = true;
  }
  std::vector<plan::Plan> plans;
  plans.reserve(scan.interrupted.size());
  // Every report entry exists before the runs are undone together: the vector must not move
  // under their pointers (at most one entry per interrupted run is added).
  rep.policies.reserve(rep.policies.size() + scan.interrupted.size());
  std::vector<std::unique_ptr<PolicyRun>> to_undo;
  std::map<std::string, std::shared_ptr<journal::GuestLock>> locks;  // one per guest, shared by its runs
  for (const auto& run : scan.interrupted) {
    if (run.steps.empty() && run.rollback_steps.empty() && !run.info.contains("policy_plan")) {
      // Killed while writing its very first record: the run never started anything.
      if (auto st = ctx_.deps.journals.remove(run.run_id); !st) {
        rep.journal_left = true;
        ctx_.progress("", "warning", "cannot remove empty journal " + run.run_id + ": " + st.error().to_string());
      }
      continue;
    }
    const auto* pp = run.info.if_contains("policy_plan");
    auto plan = pp ? plan::plan_from_json(*pp) : Result<plan::Plan>(fail("journal has no plan"));
    if (!plan || plan->policies.size() != 1) {
      report::PolicyReport pr;
      pr.policy = run.run_id;
      pr.verdict = report::Verdict::rollback_failed;
      pr.errors.push_back("journal " + run.run_id + " cannot be recovered: " +
                          (plan ? std::string("it holds no single policy plan") : plan.error().to_string()));
      rep.policies.push_back(std::move(pr));
      rep.journal_left = true;
      continue;
    }
    plans.push_back(std::move(*plan));
    const auto& policy_plan = plans.back().policies.front();
    auto& pr = report_of(rep, policy_plan);
    pr.notes.push_back("recovering interrupted run " + run.run_id);

    auto owned = std::make_unique<PolicyRun>();
    auto& w = *owned;
    w.plan = &policy_plan;
    w.report = &pr;
    auto& lock = locks[policy_plan.host];
    if (!lock) {
      auto l = ctx_.deps.locks.lock(policy_plan.host);
      if (!l) {
        locks.erase(policy_plan.host);
        pr.verdict = report::Verdict::precondition_failed;
        pr.errors.push_back("the guest is busy: " + l.error().to_string() + "; run recover again when it is done");
        rep.journal_left = true;
        continue;
      }
      lock = std::move(*l);
    }
    w.lock = lock;
    auto j = journal::Journal::resume(ctx_.deps.journals, ctx_.deps.clock, run.run_id, nullptr,
                                      json::object{{"by", "recover"}});
    if (!j) {
      pr.verdict = report::Verdict::rollback_failed;
      pr.errors.push_back("cannot resume journal " + run.run_id + ": " + j.error().to_string());
      rep.journal_left = true;
      continue;
    }
    w.journal.emplace(std::move(*j));

    // A run whose verification already said "verified" only missed its last record.
    bool verified_already = false;
    for (const auto& s : run.steps) {
      if (plan::step_kind_from(s.kind) == plan::StepKind::verify && s.state == journal::StepState::done) {
        const auto* v = s.result.if_contains("verdict");
        verified_already =
            v != nullptr && v->is_string() && report::verdict_from(v->get_string()) == report::Verdict::verified;
      }
    }
    // A plan with nothing to prove (only a comment written over a mount left as it is) whose
    // steps all ended also only missed its last record.
    const bool provable = std::any_of(policy_plan.steps.begin(), policy_plan.steps.end(),
                                      [](const plan::Step& s) { return s.kind() == plan::StepKind::verify; });
    if (!provable && !policy_plan.steps.empty() && run.completed_steps().size() == policy_plan.steps.size()) {
      verified_already = true;
    }
    if (verified_already) {
      for (const auto& s : run.steps) w.report->changes.push_back(change_of(policy_plan.steps.at(s.step)));
      w.state = PolicyRun::State::verified;
      if (!provable) w.cause = report::Verdict::converged;
      if (w.finish()) rep.journal_left = true;
      continue;
    }
    // Everything else is undone: every apply step that began, unless its inverse already ran. A
    // step is undone as its begin record says it ran (a guest's shared fstab write, narrowed to
    // the policies that reached it), which may differ from the plan.
    for (const auto& s : run.steps) {
      if (s.step >= policy_plan.steps.size()) continue;
      if (plan::step_kind_from(s.kind) == plan::StepKind::change_fstab && !s.data.empty()) {
        auto began = plan::step_from_json(s.data);
        if (began && began->kind() == plan::StepKind::change_fstab)
          w.as_run.insert_or_assign(s.step, std::move(*began));
      }
      if (s.state == journal::StepState::failed && s.error.starts_with(kRefused)) continue;
      const auto* back = run.find(journal::StepPhase::rollback, s.step);
      if (back != nullptr && back->state == journal::StepState::done) continue;
      if (std::find(w.touched.begin(), w.touched.end(), s.step) == w.touched.end()) w.touched.push_back(s.step);
    }
    std::sort(w.touched.begin(), w.touched.end());
    w.state = PolicyRun::State::failed;
    w.interrupted = true;
    if (w.touched.empty()) {
      pr.notes.push_back("no step had started: nothing to undo");
      if (w.finish()) rep.journal_left = true;
      continue;
    }
    to_undo.push_back(std::move(owned));
  }
  undo(to_undo, rep);
  rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
  remember_results(ctx_, rep);
  return rep;
}

namespace {

// Runs that made one fstab write together (the policies of one guest in one plan) are undone
// together, as the reconcile would have: the undo of that write is computed from all of them.
std::string write_of(const PolicyRun& w) {
  for (auto i : w.touched) {
    if (const auto* c = std::get_if<plan::ChangeFstab>(&w.step(i).action); c != nullptr && c->shared())
      return c->new_sha256;
  }
  return {};
}

}  // namespace

// The interrupted runs are rolled back together, kind by kind across guests as a reconcile's
// rollback is: one playbook per kind and one facts run for all of them, not one each per run
// (a controller killed amid a fleet-wide run leaves one journal per policy). Other runs on one
// guest go in separate rounds, in journal order, so that each inverse checks what the one before
// it left, as when they were undone one by one.
void Recovery::undo(const std::vector<std::unique_ptr<PolicyRun>>& runs, report::RunReport& rep) {
  std::vector<PolicyRun*> left;
  left.reserve(runs.size());
  for (auto& w : runs) left.push_back(w.get());
  while (!left.empty()) {
    std::map<std::string, std::string, std::less<>> host_write;  // host -> the write its round undoes
    std::vector<PolicyRun*> round;
    std::vector<PolicyRun*> later;
    for (auto* w : left) {
      const auto write = write_of(*w);
      auto [it, added] = host_write.try_emplace(w->host(), write);
      (added || (!write.empty() && it->second == write) ? round : later).push_back(w);
    }
    Rollback(ctx_).run(round);
    for (auto* w : round) {
      if (w->finish()) rep.journal_left = true;
    }
    left = std::move(later);
  }
}

}  // namespace pw::reconcile
