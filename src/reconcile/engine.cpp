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
#include "reconcile/step_runner.hpp"

namespace pw::reconcile {
namespace json = boost::json;

std::string describe(const proxmox::ApiError& e) {
  std::string s = e.message;
  if (!e.hint.empty()) s += " (" + e.hint + ")";
  return s;
}

std::string describe(const guest::GuestFailure& f) {
  return f.error.to_string();
}

namespace {

// A stop was asked for (signal `sig`): every run still active goes to its rollback.
void stop_runs(const std::vector<PolicyRun*>& runs, int sig) {
  for (auto* w : runs) {
    if (w->state != PolicyRun::State::active) continue;
    const auto* step = w->current();
    w->interrupted = true;
    w->fail(report::Verdict::precondition_failed,
            "stopped by " + report::signal_name(sig) + (w->touched.empty() ? " before its first change" : "") +
                (step != nullptr ? " (next: " + step->summary + ")" : std::string()));
  }
}

}  // namespace

std::string Context::restart_window_refusal(const std::string& window) const {
  if (window.empty()) return {};
  auto w = policy::parse_time_window(window);
  if (!w) return "the restart window '" + window + "' cannot be read here: " + w.error().to_string();
  const auto now = deps.clock.now();
  if (w->contains(now, local_zone())) return {};
  return "the restart window '" + window + "' is closed now (it is " + w->describe(now, local_zone()) +
         "); apply the plan inside the window, or plan again then";
}

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
  std::vector<std::unique_ptr<PolicyRun>> works;
  std::map<std::string, std::shared_ptr<journal::GuestLock>> locks;
  // Every report entry exists before any is referenced: the vector must not move under the works.
  rep.policies.reserve(rep.policies.size() + plan.policies.size());
  std::map<std::string, std::size_t, std::less<>> entry;  // policy → its report entry, without a search each
  for (std::size_t i = 0; i < rep.policies.size(); ++i) entry.emplace(rep.policies[i].policy, i);
  // Read before this pass writes a journal of its own: an unfinished run's guest and VM wait for recover.
  const auto pending = PendingRuns::scan(ctx_, PendingRuns::Purpose::change);
  for (const auto& p : plan.policies) {
    if (entry.try_emplace(p.policy, rep.policies.size()).second) rep.policies.push_back(new_entry(p));
  }
  for (const auto& p : plan.policies) {
    auto& pr = rep.policies[entry.find(p.policy)->second];
    for (const auto& s : p.steps) pr.planned.push_back(change_of(s));
    pr.warnings.insert(pr.warnings.end(), p.warnings.begin(), p.warnings.end());
    pr.notes.insert(pr.notes.end(), p.notes.begin(), p.notes.end());
    pr.remedy = p.remedy;
    if (pending.hold(p, pr, rep)) continue;
    if (p.state == plan::PolicyState::converged || p.state == plan::PolicyState::drift) {
      pr.verdict = p.state == plan::PolicyState::drift ? report::Verdict::drift : report::Verdict::converged;
      judge_converged(p, pr);
      continue;
    }
    if (p.state == plan::PolicyState::precondition_failed || p.state == plan::PolicyState::unobserved) {
      pr.verdict =
          p.state == plan::PolicyState::unobserved ? report::Verdict::unobserved : report::Verdict::precondition_failed;
      pr.errors.insert(pr.errors.end(), p.blockers.begin(), p.blockers.end());
      continue;
    }
    auto w = std::make_unique<PolicyRun>();
    w->plan = &p;
    w->report = &pr;
    auto& lock = locks[p.host];
    if (!lock) {
      auto l = ctx_.deps.locks.lock(p.host);
      if (!l) {
        pr.verdict = report::Verdict::precondition_failed;
        pr.errors.push_back(l.error().to_string());
        locks.erase(p.host);
        continue;
      }
      lock = std::move(*l);
    }
    w->lock = lock;
    json::object info{
        {"policy", p.policy},
        {"plan_id", plan.id},
        {"run_id", rep.run_id},
        {"policy_plan",
         plan::to_json(plan::Plan{plan.id, plan.created_at, plan.policies_revision, plan.policies_dirty, {p}})}};
    // One journal per policy and plan: a re-planned round gets its own.
    auto j = journal::Journal::start(ctx_.deps.journals, ctx_.deps.clock, plan.id + "." + p.policy, plan.id,
                                     std::move(info));
    if (!j) {
      pr.verdict = report::Verdict::precondition_failed;
      pr.errors.push_back("journal: " + j.error().to_string());
      continue;
    }
    w->journal.emplace(std::move(*j));
    works.push_back(std::move(w));
  }

  std::vector<PolicyRun*> active;
  for (auto& w : works) active.push_back(w.get());
  StepRunner steps(ctx_);
  for (auto kind : plan::kPhaseOrder) {
    // The safe points of a run: between phases, where no step is half-done. A stop asked for
    // (SIGTERM, SIGINT) sends every run still going to its rollback, which undoes what it began.
    if (const int sig = ctx_.stop_signal()) {
      stop_runs(active, sig);
      rep.stopped_by_signal = sig;
      break;
    }
    steps.run_phase(kind, active);
  }

  // A run whose steps are all done with no proof to make (only a comment written, the mount left
  // as it is) ends converged: nothing on its path changed.
  for (auto* w : active) {
    if (w->state == PolicyRun::State::active && w->current() == nullptr) {
      w->state = PolicyRun::State::verified;
      w->cause = report::Verdict::converged;
    }
  }
  std::vector<PolicyRun*> to_undo;
  for (auto* w : active) {
    if (w->state == PolicyRun::State::failed || w->state == PolicyRun::State::conflict) to_undo.push_back(w);
  }
  if (!to_undo.empty()) Rollback(ctx_).run(to_undo);
  for (auto* w : active) {
    if (w->state == PolicyRun::State::conflict && w->rollback_ok && conflicted != nullptr) {
      conflicted->push_back(w->plan->policy);
      w->report->notes.push_back("reality moved while applying: re-observed and re-planned");
    }
    if (w->finish()) rep.journal_left = true;
  }
}

// ---- commands ------------------------------------------------------------------------------

report::RunReport Engine::reconcile(std::span<const policy::StoragePath> all, bool check_only) {
  auto rep = new_report(ctx_, check_only ? report::RunMode::check : report::RunMode::reconcile, "");
  std::span<const policy::StoragePath> remaining = all;
  std::vector<policy::StoragePath> retry;  // after a conflict, only those policies (never a copy of all)
  std::map<std::string, std::vector<std::string>> carried;  // notes of rounds that hit a conflict
  for (int round = 1; round <= ctx_.options.max_rounds && !remaining.empty(); ++round) {
    if (check_only) {
      // Only the report is kept: a 10,000-VM check never holds every plan at once.
      const auto ctx = planning_context();
      rep.plan_id = ctx.plan_id;
      rep.policies.resize(remaining.size());
      Preflight preflight(ctx_);
      const auto pending = PendingRuns::scan(ctx_, PendingRuns::Purpose::check);
      Observer(ctx_).observe_and_plan(remaining, ctx, [&](std::size_t i, plan::PolicyPlan&& p) {
        preflight.check(p);
        auto& pr = rep.policies[i];
        pr = new_entry(p);
        for (const auto& s : p.steps) pr.planned.push_back(change_of(s));
        pr.warnings = std::move(p.warnings);
        pr.notes = std::move(p.notes);
        pr.errors = std::move(p.blockers);
        pr.remedy = std::move(p.remedy);
        pr.verdict = p.state == plan::PolicyState::converged ? report::Verdict::converged
                     : p.state == plan::PolicyState::changes || p.state == plan::PolicyState::drift
                         ? report::Verdict::drift
                     : p.state == plan::PolicyState::unobserved ? report::Verdict::unobserved
                                                                : report::Verdict::precondition_failed;
        judge_converged(p, pr);
        pending.note(p, pr);
      });
      remaining = {};                              // checked, all of them: none is left over from a conflict
      rep.stopped_by_signal = ctx_.stop_signal();  // policies left unobserved say so
      break;
    }
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
  // A check stores nothing, as `terraform plan` writes no state: the stored results (status, the
  // textfile's last success, the fleet page's history) are those of runs that acted, and a
  // 10,000-VM check spends no fsync per policy. Its report (--report-file) is the check's record.
  if (!check_only) remember_results(ctx_, rep);
  return rep;
}

report::RunReport Engine::apply(const plan::Plan& plan) {
  auto rep = new_report(ctx_, report::RunMode::apply, plan.id);
  rep.policies_revision = plan.policies_revision;
  rep.policies_dirty = plan.policies_dirty;
  // Apply never re-decides: it only checks that what the plan was made from still holds.
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
  std::vector<std::string> moved;
  // A plan saved inside a restart window may be applied outside it: its disruptive steps carry
  // the window and it is checked now, before anything is written (and again right before each
  // such step: an earlier phase may take time).
  for (const auto& p : plan.policies) {
    for (const auto& s : p.steps) {
      std::string refusal;
      if (const auto* nic = std::get_if<plan::SetNic>(&s.action); nic != nullptr && nic->hotplug) {
        refusal = ctx_.restart_window_refusal(nic->restart_window);
      } else if (const auto* rs = std::get_if<plan::RestartVm>(&s.action)) {
        refusal = ctx_.restart_window_refusal(rs->restart_window);
      }
      if (!refusal.empty()) moved.push_back(p.policy + ": " + refusal);
    }
  }
  {
    // The privileges, as at plan time: one revoked since is found before anything is written.
    plan::Plan checked = plan;
    Preflight(ctx_).check(checked);
    for (std::size_t i = 0; i < checked.policies.size(); ++i) {
      if (plan.policies[i].state == plan::PolicyState::changes &&
          checked.policies[i].state == plan::PolicyState::precondition_failed) {
        for (const auto& b : checked.policies[i].blockers) moved.push_back(plan.policies[i].policy + ": " + b);
      }
    }
  }
  std::size_t vi = 0;
  for (const auto& p : plan.policies) {
    for (const auto& s : p.steps) {
      if (const auto* nic = std::get_if<plan::SetNic>(&s.action)) {
        const auto& r = pendings[vi++];
        if (!r)
          moved.push_back(p.policy + ": cannot read VM " + std::to_string(nic->vm.vmid) + ": " + describe(r.error()));
        else if (r->digest != nic->digest)
          moved.push_back(p.policy + ": the Proxmox config of VM " + std::to_string(nic->vm.vmid) +
                          " changed since the plan");
      }
      if (const auto* fs = std::get_if<plan::ChangeFstab>(&s.action)) {
        auto it = facts.find(p.host);
        if (it == facts.end() || !it->second) {
          moved.push_back(p.policy + ": cannot read the fstab of " + p.host);
        } else {
          const auto hash = it->second->fstab_sha256.empty() ? guest::sha256_hex(it->second->fstab_content)
                                                             : it->second->fstab_sha256;
          if (hash != fs->old_sha256)
            moved.push_back(p.policy + ": the fstab of " + p.host + " changed since the plan");
        }
      }
    }
  }
  if (!moved.empty()) {
    for (const auto& p : plan.policies) {
      auto& pr = report_of(rep, p);
      pr.verdict = report::Verdict::precondition_failed;
      for (const auto& m : moved) {
        if (!m.starts_with(p.policy + ":")) continue;
        const auto why = m.substr(p.policy.size() + 2);
        const bool not_stale =
            why.find("restart window") != std::string::npos || why.find("; grant it: ") != std::string::npos;
        pr.errors.push_back(not_stale ? why : why + "; run 'pathwarden plan' again");
      }
      if (pr.errors.empty())
        pr.errors.push_back("not applied: the plan is stale for other policies; run 'pathwarden plan' again");
    }
    rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
    return rep;
  }
  execute(plan, rep, nullptr);
  rep.finished_at = journal::format_utc(ctx_.deps.clock.now());
  remember_results(ctx_, rep);
  return rep;
}

report::RunReport Engine::verify(std::span<const policy::StoragePath> policies, bool probe) {
  auto rep = Audit(ctx_).run(policies, probe);
  rep.stopped_by_signal = ctx_.stop_signal();
  return rep;
}

report::RunReport Engine::recover() {
  return Recovery(ctx_).run();
}

}  // namespace pw::reconcile
