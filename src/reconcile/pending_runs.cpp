// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/pending_runs.hpp"

#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

#include "journal/replay.hpp"
#include "reconcile/verdicts.hpp"

namespace pw::reconcile {
namespace json = boost::json;

namespace {

std::string string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

int vmid_at(const json::object& o) {
  const auto* vm = o.if_contains("vm");
  if (vm == nullptr || !vm->is_object()) return 0;
  const auto* id = vm->get_object().if_contains("vmid");
  if (id == nullptr) return 0;
  if (id->is_int64()) return static_cast<int>(id->get_int64());
  if (id->is_uint64()) return static_cast<int>(id->get_uint64());
  return 0;
}

// The one policy plan of a journal's run-started record ("policy_plan", as Engine::execute
// writes it), read field by field rather than through plan::plan_from_json: a journal written
// by another pathwarden version still names its guest and VM.
const json::object* policy_plan_of(const journal::RunReplay& r) {
  const auto* pp = r.info.if_contains("policy_plan");
  if (pp == nullptr || !pp->is_object()) return nullptr;
  const auto* list = pp->get_object().if_contains("policies");
  if (list == nullptr || !list->is_array() || list->get_array().size() != 1) return nullptr;
  const auto& first = list->get_array().front();
  return first.is_object() ? &first.get_object() : nullptr;
}

}  // namespace

PendingRuns PendingRuns::scan(const Context& ctx, Purpose purpose) {
  PendingRuns out;
  const auto found = journal::scan_journals(ctx.deps.journals, journal::ScanScope::unfinished_only);
  for (const auto& e : found.unreadable) {
    out.unknown_.push_back(e.to_string() +
                           "; the guest its run changed is unknown, so no guest is changed until that journal is dealt "
                           "with ('pathwarden recover' reports it)");
  }
  std::map<std::string, std::pair<Writer, std::string>, std::less<>> writers;  // by host: one lock try each
  for (const auto& r : found.interrupted) {
    // Killed while writing its first record, before the run began anything: recover only removes
    // it, so it holds nothing back.
    if (r.steps.empty() && r.rollback_steps.empty() && !r.info.contains("policy_plan")) continue;
    Run run;
    run.journal = r.run_id;
    run.policy = string_at(r.info, "policy");
    if (const auto* p = policy_plan_of(r)) {
      run.host = string_at(*p, "host");
      run.vmid = vmid_at(*p);
      if (run.policy.empty()) run.policy = string_at(*p, "policy");
    }
    // Each step record names its guest too, for a journal whose plan cannot be read.
    for (const auto* steps : {&r.steps, &r.rollback_steps}) {
      for (const auto& s : *steps) {
        if (run.host.empty() && s.guest) run.host = *s.guest;
      }
    }
    if (run.host.empty() && run.vmid == 0) {
      out.unknown_.push_back("journal " + r.run_id +
                             " is unfinished and names no guest (its run-started record holds no policy plan), so "
                             "no guest is changed until it is dealt with ('pathwarden recover' reports it)");
      continue;
    }
    if (purpose == Purpose::change && !run.host.empty()) {
      auto [at, fresh] = writers.try_emplace(run.host);
      if (fresh) {
        // Looked at, never written: free means the run's process is gone (flock dies with it).
        auto held = ctx.deps.locks.holder(run.host);
        at->second = !held   ? std::pair{Writer::running, held.error().what}
                     : *held ? std::pair{Writer::running, (*held)->what}
                             : std::pair{Writer::gone, std::string()};
      }
      run.writer = at->second.first;
      run.lock_error = at->second.second;
    }
    out.runs_.push_back(std::move(run));
  }
  return out;
}

std::vector<std::string> PendingRuns::reasons(const plan::PolicyPlan& p, bool& recover) const {
  std::vector<std::string> out;
  for (const auto& r : runs_) {
    const bool same_host = !r.host.empty() && r.host == p.host;
    if (!same_host && (r.vmid == 0 || r.vmid != p.vm.vmid)) continue;
    std::string what = (same_host ? "guest " + p.host : "VM " + std::to_string(p.vm.vmid)) +
                       " has an unfinished run (journal " + r.journal;
    if (!r.policy.empty()) what += ", policy " + r.policy;
    if (!same_host && !r.host.empty()) what += ", on guest " + r.host;
    what += ")";
    switch (r.writer) {
      case Writer::gone:
        what += ": nothing is changed on it until 'pathwarden recover' finishes that run";
        recover = true;
        break;
      case Writer::running:
        what += " that cannot be taken over now (" + r.lock_error +
                "): nothing is changed on it until that run ends, or 'pathwarden recover' finishes it";
        break;
      case Writer::unknown:
        what +=
            ": nothing is changed on it until that run ends or, if it was interrupted, 'pathwarden recover' "
            "finishes it";
        break;
    }
    out.push_back(std::move(what));
  }
  if (!unknown_.empty()) recover = true;
  out.insert(out.end(), unknown_.begin(), unknown_.end());
  return out;
}

bool PendingRuns::hold(const plan::PolicyPlan& p, report::PolicyReport& pr, report::RunReport& rep) const {
  if (empty()) return false;
  bool recover = false;
  auto why = reasons(p, recover);
  if (why.empty()) return false;
  pr.verdict = policy_verdict(p.state, RunEnd::held);
  pr.errors.insert(pr.errors.end(), p.blockers.begin(), p.blockers.end());
  pr.errors.insert(pr.errors.end(), std::make_move_iterator(why.begin()), std::make_move_iterator(why.end()));
  if (recover) rep.journal_left = true;
  return true;
}

void PendingRuns::note(const plan::PolicyPlan& p, report::PolicyReport& pr) const {
  if (empty()) return;
  bool recover = false;
  auto why = reasons(p, recover);
  pr.notes.insert(pr.notes.end(), std::make_move_iterator(why.begin()), std::make_move_iterator(why.end()));
}

}  // namespace pw::reconcile
