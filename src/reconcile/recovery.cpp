// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/recovery.hpp"

#include <algorithm>
#include <map>

#include "journal/journal.hpp"
#include "journal/replay.hpp"
#include "reconcile/policy_run.hpp"
#include "reconcile/rollback.hpp"
#include "reconcile/run_reports.hpp"
#include "reconcile/run_set.hpp"

namespace pw::reconcile {
report::RunReport Recovery::run() {
  auto rep = new_report(ctx_, report::RunMode::recover, "");
  auto scan = journal::scan_journals(ctx_.deps.journals);
  if (!scan.interrupted.empty())
    ctx_.progress(Activity::recover, "",
                  "finishing " + std::to_string(scan.interrupted.size()) + " interrupted run(s)");
  for (const auto& bad : scan.unreadable) {
    report::PolicyReport pr;
    pr.policy = "(journal)";
    pr.verdict = report::Verdict::rollback_failed;
    pr.errors.push_back(bad.to_string() + "; inspect it by hand, then remove it");
    rep.policies.push_back(std::move(pr));
    rep.journal_left = true;
  }
  std::vector<plan::Plan> plans;
  plans.reserve(scan.interrupted.size());  // the runs point into it: it must not move
  RunSet runs(ctx_, rep);
  std::vector<PolicyRun*> to_undo;
  for (const auto& replay : scan.interrupted) {
    if (replay.steps.empty() && replay.rollback_steps.empty() && !replay.info.contains("policy_plan")) {
      // Killed while writing its very first record: the run never started anything.
      if (auto st = ctx_.deps.journals.remove(replay.run_id); !st) {
        rep.journal_left = true;
        ctx_.warn("", "cannot remove empty journal " + replay.run_id + ": " + st.error().to_string());
      }
      continue;
    }
    const auto* pp = replay.info.if_contains("policy_plan");
    auto plan = pp ? plan::plan_from_json(*pp) : Result<plan::Plan>(fail("journal has no plan"));
    if (!plan || plan->policies.size() != 1) {
      report::PolicyReport pr;
      pr.policy = replay.run_id;
      pr.verdict = report::Verdict::rollback_failed;
      pr.errors.push_back("journal " + replay.run_id + " cannot be recovered: " +
                          (plan ? std::string("it holds no single policy plan") : plan.error().to_string()));
      rep.policies.push_back(std::move(pr));
      rep.journal_left = true;
      continue;
    }
    plans.push_back(std::move(*plan));
    auto* run = runs.resume(replay, plans.back().policies.front());
    if (run == nullptr) continue;
    if (run->resume(replay) == PolicyRun::Resumed::to_undo) {
      to_undo.push_back(run);
    } else if (run->finish()) {
      rep.journal_left = true;
    }
  }
  undo(to_undo, rep);
  rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
  remember_results(ctx_, rep);
  return rep;
}

namespace {

// Runs that made one fstab write together (the policies of one guest in one plan) are undone
// together, as the reconcile would have: the undo of that write is computed from all of them.
std::string write_of(const PolicyRun& run) {
  for (auto i : run.touched()) {
    if (const auto* c = std::get_if<plan::ChangeFstab>(&run.step(i).action); c != nullptr && c->shared())
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
void Recovery::undo(std::vector<PolicyRun*> left, report::RunReport& rep) {
  while (!left.empty()) {
    std::map<std::string, std::string, std::less<>> host_write;  // host -> the write its round undoes
    std::vector<PolicyRun*> round;
    std::vector<PolicyRun*> later;
    for (auto* run : left) {
      const auto write = write_of(*run);
      auto [it, added] = host_write.try_emplace(run->host(), write);
      (added || (!write.empty() && it->second == write) ? round : later).push_back(run);
    }
    Rollback(ctx_).run(round);
    for (auto* run : round) {
      if (run->finish()) rep.journal_left = true;
    }
    left = std::move(later);
  }
}

}  // namespace pw::reconcile
