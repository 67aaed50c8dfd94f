// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/engine.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <ctime>
#include <map>
#include <memory>
#include <random>

#include "guest/sha256.hpp"
#include "journal/journal.hpp"
#include "plan/guest_writes.hpp"
#include "reconcile/audit.hpp"
#include "reconcile/evidence.hpp"
#include "reconcile/observer.hpp"
#include "reconcile/pending_runs.hpp"
#include "reconcile/policy_run.hpp"
#include "reconcile/preflight.hpp"
#include "reconcile/recovery.hpp"
#include "reconcile/rollback.hpp"
#include "reconcile/run_reports.hpp"
#include "reconcile/run_set.hpp"
#include "reconcile/step_runner.hpp"
#include "reconcile/verdicts.hpp"

namespace pw::reconcile {
namespace {

std::string random_hex(std::size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (auto& c : s) c = kHex[rng() % 16];
  return s;
}

}  // namespace

std::vector<plan::Observation> Engine::observe(std::span<const policy::StoragePath> policies) {
  return Observer(ctx_).observe(policies);
}

plan::PlanningContext Engine::planning_context() {
  plan::PlanningContext ctx;
  ctx.plan_id = journal::make_run_id(ctx_.deps.clock) + "-" + random_hex(4);
  ctx.created_at = journal::format_utc(ctx_.deps.clock.now());
  ctx.now = ctx_.deps.clock.now();
  ctx.local_zone = ctx_.local_zone();
  ctx.backup_dir = ctx_.options.backup_dir;
  return ctx;
}

plan::Plan Engine::make_plan(std::span<const policy::StoragePath> policies, std::vector<plan::Observation> observed) {
  const auto ctx = planning_context();
  auto plan = plan::make_plan(policies, observed, ctx);
  std::vector<const policy::StoragePath*> ptrs;
  for (const auto& p : policies) ptrs.push_back(&p);
  Observer(ctx_).live_status(ptrs, observed, plan.policies, ctx);
  plan::merge_guest_writes(plan.policies);  // a policy re-planned with the live state joins its guest's write again
  Observer::prove_converged(observed, plan.policies);
  Observer(ctx_).mark_traffic(observed, plan.policies);
  Preflight(ctx_).check(plan);
  plan.policies_revision = ctx_.options.policies_revision;
  plan.policies_dirty = ctx_.options.policies_dirty;
  return plan;
}

plan::Plan Engine::observe_and_plan(std::span<const policy::StoragePath> policies) {
  const auto ctx = planning_context();
  std::vector<std::optional<plan::PolicyPlan>> slots(policies.size());
  Observer(ctx_).observe_and_plan(policies, ctx, [&](std::size_t i, plan::PolicyPlan&& p) { slots[i] = std::move(p); });
  plan::Plan plan;
  plan.id = ctx.plan_id;
  plan.created_at = ctx.created_at;
  plan.policies_revision = ctx_.options.policies_revision;
  plan.policies_dirty = ctx_.options.policies_dirty;
  plan.policies.reserve(slots.size());
  for (auto& s : slots) plan.policies.push_back(std::move(*s));
  Preflight(ctx_).check(plan);
  return plan;
}

void Engine::execute(const plan::Plan& plan, report::RunReport& rep, std::vector<std::string>* conflicted) {
  std::map<std::string, std::size_t, std::less<>> entry;  // policy → its report entry, without a search each
  for (std::size_t i = 0; i < rep.policies.size(); ++i) entry.emplace(rep.policies[i].policy, i);
  // Read before this pass writes a journal of its own: an unfinished run's guest and VM wait for recover.
  const auto pending = PendingRuns::scan(ctx_, PendingRuns::Purpose::change);
  for (const auto& p : plan.policies) {
    if (entry.try_emplace(p.policy, rep.policies.size()).second) rep.policies.push_back(new_entry(p));
  }
  RunSet runs(ctx_, rep);
  for (const auto& p : plan.policies) {
    const auto at = entry.find(p.policy)->second;
    auto& pr = rep.policies[at];
    for (const auto& s : p.steps) pr.planned.push_back(change_of(s));
    pr.warnings.insert(pr.warnings.end(), p.warnings.begin(), p.warnings.end());
    pr.notes.insert(pr.notes.end(), p.notes.begin(), p.notes.end());
    pr.remedy = p.remedy;
    if (pending.hold(p, pr, rep)) continue;
    if (p.state != plan::PolicyState::changes) {
      pr.verdict = policy_verdict(p.state, RunEnd::not_run);
      pr.errors.insert(pr.errors.end(), p.blockers.begin(), p.blockers.end());
      judge_converged(p, pr);
      continue;
    }
    runs.start(plan, p, at);
  }

  const auto active = runs.runs();
  StepRunner steps(ctx_);
  for (auto kind : plan::kPhaseOrder) {
    // The safe points of a run: between phases, where no step is half-done. A stop asked for
    // (SIGTERM, SIGINT) sends every run still going to its rollback, which undoes what it began.
    if (const int sig = ctx_.stop_signal()) {
      for (auto* run : active) run->interrupt(sig);
      rep.stopped_by_signal = sig;
      break;
    }
    steps.run_phase(kind, active);
  }
  std::vector<PolicyRun*> to_undo;
  for (auto* run : active) {
    run->end_without_proof();
    if (run->state() == PolicyRun::State::failed || run->state() == PolicyRun::State::conflict) to_undo.push_back(run);
  }
  if (!to_undo.empty()) Rollback(ctx_).run(to_undo);
  for (auto* run : active) {
    if (conflicted != nullptr && run->to_replan()) conflicted->push_back(run->policy());
    if (run->finish()) rep.journal_left = true;
  }
}

// ---- commands ------------------------------------------------------------------------------

report::RunReport Engine::check(std::span<const policy::StoragePath> policies) {
  auto rep = new_report(ctx_, report::RunMode::check, "");
  // Only the report is kept: a 10,000-VM check never holds every plan at once.
  const auto ctx = planning_context();
  rep.plan_id = ctx.plan_id;
  rep.policies.resize(policies.size());
  Preflight preflight(ctx_);
  const auto pending = PendingRuns::scan(ctx_, PendingRuns::Purpose::check);
  Observer(ctx_).observe_and_plan(policies, ctx, [&](std::size_t i, plan::PolicyPlan&& p) {
    preflight.check(p);
    auto& pr = rep.policies[i];
    pr = new_entry(p);
    for (const auto& s : p.steps) pr.planned.push_back(change_of(s));
    pr.warnings = std::move(p.warnings);
    pr.notes = std::move(p.notes);
    pr.errors = std::move(p.blockers);
    pr.remedy = std::move(p.remedy);
    pr.verdict = policy_verdict(p.state, RunEnd::checked);
    judge_converged(p, pr);
    pending.note(p, pr);
  });
  rep.stopped_by_signal = ctx_.stop_signal();  // policies left unobserved say so
  rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
  // A check stores nothing, as `terraform plan` writes no state: the stored results (status, the
  // textfile's last success, the fleet page's history) are those of runs that acted, and a
  // 10,000-VM check spends no fsync per policy. Its report (--report-file) is the check's record.
  return rep;
}

report::RunReport Engine::reconcile(std::span<const policy::StoragePath> all, bool check_only) {
  if (check_only) return check(all);
  auto rep = new_report(ctx_, report::RunMode::reconcile, "");
  std::span<const policy::StoragePath> remaining = all;
  std::vector<policy::StoragePath> retry;  // after a conflict, only those policies (never a copy of all)
  std::map<std::string, std::vector<std::string>> carried;  // notes of rounds that hit a conflict
  for (int round = 1; round <= ctx_.options.max_rounds && !remaining.empty(); ++round) {
    auto plan = observe_and_plan(remaining);
    if (rep.plan_id.empty()) rep.plan_id = plan.id;
    std::vector<std::string> conflicted;
    execute(plan, rep, &conflicted);
    if (rep.stopped_by_signal > 0) {  // no re-plan of conflicts after a stop
      remaining = {};
      break;
    }
    std::vector<policy::StoragePath> next;
    for (const auto& p : remaining) {
      if (std::find(conflicted.begin(), conflicted.end(), p.name) != conflicted.end()) next.push_back(p);
    }
    retry = std::move(next);
    remaining = retry;
    if (!remaining.empty() && round < ctx_.options.max_rounds) {
      // Requeue with backoff, as controller-runtime does on a conflict.
      ctx_.deps.sleeper.sleep(ctx_.options.requeue_backoff * (1 << (round - 1)));
      for (const auto& p : remaining) {
        auto it =
            std::find_if(rep.policies.begin(), rep.policies.end(), [&](const auto& r) { return r.policy == p.name; });
        if (it != rep.policies.end()) {
          carried[p.name] = std::move(it->notes);
          rep.policies.erase(it);
        }
      }
    }
  }
  for (auto& pr : rep.policies) {
    if (auto c = carried.find(pr.policy); c != carried.end())
      pr.notes.insert(pr.notes.begin(), c->second.begin(), c->second.end());
  }
  for (const auto& p : remaining) {
    for (auto& pr : rep.policies) {
      if (pr.policy == p.name) {
        pr.errors.push_back("reality kept changing during " + std::to_string(ctx_.options.max_rounds) +
                            " attempts (concurrent edits?); try again later");
      }
    }
  }
  rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
  remember_results(ctx_, rep);
  return rep;
}

// Why each policy of a saved plan may not be applied now, checked before anything is written.
// Apply never re-decides: it only checks that what the plan was made from still holds.
std::map<std::string, std::vector<Engine::Refusal>, std::less<>> Engine::refusals(const plan::Plan& plan) {
  std::vector<proxmox::VmRef> vms;
  std::vector<std::string> hosts;
  for (const auto& p : plan.policies) {
    for (const auto& s : p.steps) {
      if (const auto* nic = std::get_if<plan::SetNic>(&s.action)) vms.push_back(nic->vm);
      if (std::holds_alternative<plan::ChangeFstab>(s.action)) hosts.push_back(p.host);
    }
  }
  auto pendings = ctx_.deps.api.read_pendings(vms);
  auto facts = ctx_.deps.guests.gather_facts(hosts);
  std::map<std::string, std::vector<Refusal>, std::less<>> refused;
  // A plan saved inside a restart window may be applied outside it: its disruptive steps carry
  // the window and it is checked now, before anything is written (and again right before each
  // such step: an earlier phase may take time).
  for (const auto& p : plan.policies) {
    for (const auto& s : p.steps) {
      std::optional<std::string> closed;
      if (const auto* nic = std::get_if<plan::SetNic>(&s.action); nic != nullptr && nic->hotplug) {
        closed = ctx_.restart_window_refusal(nic->restart_window);
      } else if (const auto* rs = std::get_if<plan::RestartVm>(&s.action)) {
        closed = ctx_.restart_window_refusal(rs->restart_window);
      }
      if (closed) refused[p.policy].push_back({Refusal::Kind::window_closed, std::move(*closed)});
    }
  }
  {
    // The privileges, as at plan time: one revoked since is found before anything is written.
    plan::Plan checked = plan;
    Preflight(ctx_).check(checked);
    for (std::size_t i = 0; i < checked.policies.size(); ++i) {
      if (plan.policies[i].state == plan::PolicyState::changes &&
          checked.policies[i].state == plan::PolicyState::precondition_failed) {
        for (const auto& b : checked.policies[i].blockers)
          refused[plan.policies[i].policy].push_back({Refusal::Kind::privilege, b});
      }
    }
  }
  std::size_t vi = 0;
  for (const auto& p : plan.policies) {
    auto stale = [&](std::string why) { refused[p.policy].push_back({Refusal::Kind::stale, std::move(why)}); };
    for (const auto& s : p.steps) {
      if (const auto* nic = std::get_if<plan::SetNic>(&s.action)) {
        const auto& r = pendings[vi++];
        if (!r)
          stale("cannot read VM " + std::to_string(nic->vm.vmid) + ": " + describe(r.error()));
        else if (r->digest != nic->digest)
          stale("the Proxmox config of VM " + std::to_string(nic->vm.vmid) + " changed since the plan");
      }
      if (const auto* fs = std::get_if<plan::ChangeFstab>(&s.action)) {
        auto it = facts.find(p.host);
        if (it == facts.end() || !it->second) {
          stale("cannot read the fstab of " + p.host);
        } else {
          const auto hash = it->second->fstab_sha256.empty() ? guest::sha256_hex(it->second->fstab_content)
                                                             : it->second->fstab_sha256;
          if (hash != fs->old_sha256) stale("the fstab of " + p.host + " changed since the plan");
        }
      }
    }
  }
  return refused;
}

report::RunReport Engine::apply(const plan::Plan& plan) {
  auto rep = new_report(ctx_, report::RunMode::apply, plan.id);
  rep.policies_revision = plan.policies_revision;
  rep.policies_dirty = plan.policies_dirty;
  const auto refused = refusals(plan);
  if (!refused.empty()) {
    for (const auto& p : plan.policies) {
      auto& pr = report_of(rep, p);
      pr.verdict = policy_verdict(p.state, RunEnd::not_applied);
      if (auto it = refused.find(p.policy); it != refused.end()) {
        for (const auto& r : it->second)
          pr.errors.push_back(r.kind == Refusal::Kind::stale ? r.why + "; run 'pathwarden plan' again" : r.why);
      }
      if (pr.errors.empty())
        pr.errors.emplace_back("not applied: the plan is stale for other policies; run 'pathwarden plan' again");
    }
    rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
    return rep;
  }
  execute(plan, rep, nullptr);
  rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
  remember_results(ctx_, rep);
  return rep;
}

report::RunReport Engine::audit(std::span<const policy::StoragePath> policies, bool probe) {
  auto rep = Audit(ctx_).run(policies, probe);
  rep.stopped_by_signal = ctx_.stop_signal();
  return rep;
}

report::RunReport Engine::recover() {
  return Recovery(ctx_).run();
}

}  // namespace pw::reconcile
