// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/run_set.hpp"

#include "journal/journal.hpp"
#include "reconcile/run_reports.hpp"

namespace pw::reconcile {
namespace json = boost::json;
using report::Verdict;

std::size_t RunSet::entry_of(const plan::PolicyPlan& policy) {
  for (std::size_t i = 0; i < report_.policies.size(); ++i) {
    if (report_.policies[i].policy == policy.policy) return i;
  }
  report_.policies.push_back(new_entry(policy));
  return report_.policies.size() - 1;
}

std::shared_ptr<journal::GuestLock> RunSet::lock(const std::string& host, Status& why) {
  auto& held = locks_[host];
  if (held) return held;
  auto l = ctx_.deps.locks.lock(host);
  if (!l) {
    locks_.erase(host);
    why = std::unexpected(l.error());
    return nullptr;
  }
  held = std::move(*l);
  return held;
}

PolicyRun* RunSet::start(const plan::Plan& plan, const plan::PolicyPlan& p, std::size_t entry) {
  Status why;
  auto held = lock(p.host, why);
  if (!held) {
    report_.policies[entry].verdict = Verdict::precondition_failed;
    report_.policies[entry].errors.push_back(why.error().to_string());
    return nullptr;
  }
  json::object info{{"policy", p.policy},
                    {"plan_id", plan.id},
                    {"run_id", report_.run_id},
                    {"policy_plan", plan::to_json(plan::Plan{
                                        plan.id, plan.created_at, plan.policies_revision, plan.policies_dirty, {p}})}};
  // One journal per policy and plan: a re-planned round gets its own.
  auto j =
      journal::Journal::start(ctx_.deps.journals, ctx_.deps.clock, plan.id + "." + p.policy, plan.id, std::move(info));
  if (!j) {
    report_.policies[entry].verdict = Verdict::precondition_failed;
    report_.policies[entry].errors.push_back("journal: " + j.error().to_string());
    return nullptr;
  }
  return &runs_.emplace_back(p, report_, entry, std::move(held), std::move(*j));
}

PolicyRun* RunSet::resume(const journal::RunReplay& replay, const plan::PolicyPlan& p) {
  const auto entry = entry_of(p);
  report_.policies[entry].notes.push_back("recovering interrupted run " + replay.run_id);
  Status why;
  auto held = lock(p.host, why);
  if (!held) {
    report_.policies[entry].verdict = Verdict::precondition_failed;
    report_.policies[entry].errors.push_back("the guest is busy: " + why.error().to_string() +
                                             "; run recover again when it is done");
    report_.journal_left = true;
    return nullptr;
  }
  auto j = journal::Journal::resume(ctx_.deps.journals, ctx_.deps.clock, replay.run_id, nullptr,
                                    json::object{{"by", "recover"}});
  if (!j) {
    report_.policies[entry].verdict = Verdict::rollback_failed;
    report_.policies[entry].errors.push_back("cannot resume journal " + replay.run_id + ": " + j.error().to_string());
    report_.journal_left = true;
    return nullptr;
  }
  return &runs_.emplace_back(p, report_, entry, std::move(held), std::move(*j));
}

std::vector<PolicyRun*> RunSet::runs() {
  std::vector<PolicyRun*> out;
  out.reserve(runs_.size());
  for (auto& r : runs_) out.push_back(&r);
  return out;
}

}  // namespace pw::reconcile
