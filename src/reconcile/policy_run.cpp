// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/policy_run.hpp"

#include <algorithm>
#include <stdexcept>

#include "reconcile/evidence.hpp"
#include "reconcile/run_reports.hpp"
#include "reconcile/verdicts.hpp"

namespace pw::reconcile {
namespace json = boost::json;
using report::Verdict;

PolicyRun::PolicyRun(const plan::PolicyPlan& plan, report::RunReport& report, std::size_t entry,
                     std::shared_ptr<journal::GuestLock> lock, journal::Journal journal)
    : plan_(&plan), report_(&report), entry_(entry), lock_(std::move(lock)), journal_(std::move(journal)) {}

const plan::Step& PolicyRun::step(std::size_t i) const {
  auto it = as_run_.find(i);
  return it != as_run_.end() ? it->second : plan_->steps[i];
}

const plan::Step& PolicyRun::current_step() const {
  const auto* s = current();
  if (s == nullptr) throw std::logic_error("policy " + policy() + " has no next step, yet a step unit was handed it");
  return *s;
}

bool PolicyRun::at(plan::StepKind kind) const {
  return state_ == State::active && current() != nullptr && current()->kind() == kind;
}

bool PolicyRun::touched_any(plan::StepKind kind) const {
  return std::any_of(touched_.begin(), touched_.end(), [&](std::size_t i) { return step(i).kind() == kind; });
}

bool PolicyRun::to_replan() {
  if (state_ != State::conflict || !rollback_ok_) return false;
  note("reality moved while applying: re-observed and re-planned");
  return true;
}

void PolicyRun::note(std::string text) {
  entry_mut().notes.push_back(std::move(text));
}

void PolicyRun::error(std::string text) {
  entry_mut().errors.push_back(std::move(text));
}

void PolicyRun::report_verification(report::Verification v) {
  entry_mut().verification = std::move(v);
}

void PolicyRun::fail(Verdict cause, std::string error) {
  state_ = State::failed;
  cause_ = cause;
  if (!error.empty()) this->error(std::move(error));
}

bool PolicyRun::checked(Status st, std::string_view what) {
  if (st) return true;
  if (journal_ok_) {
    error("journal " + journal_.describe() + ": cannot record " + std::string(what) + ": " + st.error().to_string() +
          "; the run stops here");
  }
  journal_ok_ = false;
  // What began is undone; a run already rolling back goes on (its inverses check what is there).
  if (state_ == State::active || state_ == State::verified) {
    state_ = State::failed;
    cause_ = Verdict::precondition_failed;
    apply_failed_ = true;  // the journal is part of applying: its layer failed, not the proof
  }
  return false;
}

// ---- apply ---------------------------------------------------------------------------------

bool PolicyRun::begin() {
  const auto& s = step(next_);
  if (!checked(journal_.step_begin({journal::StepPhase::apply, next_, std::string(plan::to_string(s.kind())),
                                    plan_->host, plan::step_to_json(s).as_object()}),
               "the start of '" + s.summary + "'")) {
    return false;  // never started: nothing of it to undo
  }
  touched_.push_back(next_);
  return true;
}

bool PolicyRun::begin_as(plan::Step step) {
  as_run_.insert_or_assign(next_, std::move(step));
  if (begin()) return true;
  as_run_.erase(next_);
  return false;
}

void PolicyRun::failed_record(const std::string& detail, bool changed_nothing) {
  checked(journal_.step_failed(journal::StepPhase::apply, next_, detail, changed_nothing), "a failed step");
  // Nothing of a step that changed nothing is undone.
  if (changed_nothing && !touched_.empty() && touched_.back() == next_) touched_.pop_back();
}

void PolicyRun::end(StepEnd e) {
  switch (e.kind) {
    case StepEnd::Kind::done: {
      const auto& s = step(next_);
      if (s.kind() != plan::StepKind::prove_path) entry_mut().changes.push_back(change_of(s));  // a proof, not a change
      checked(journal_.step_done(journal::StepPhase::apply, next_, std::move(e.result)),
              "the end of '" + s.summary + "'");
      ++next_;
      return;
    }
    case StepEnd::Kind::refused:
      failed_record(e.detail, true);
      if (state_ == State::active) state_ = State::conflict;
      note(std::move(e.message));
      return;
    case StepEnd::Kind::untouched:
      failed_record(e.detail, true);
      apply_failed_ = true;
      fail(Verdict::precondition_failed, std::move(e.message));
      return;
    case StepEnd::Kind::failed:
      failed_record(e.detail, false);
      apply_failed_ = true;
      fail(Verdict::precondition_failed, std::move(e.message));
      return;
  }
}

void PolicyRun::stop(std::string error) {
  apply_failed_ = true;
  fail(Verdict::precondition_failed, std::move(error));
}

void PolicyRun::interrupt(int signal) {
  if (state_ != State::active) return;
  const auto* next = current();
  interrupted_ = true;
  fail(Verdict::precondition_failed, "stopped by " + report::signal_name(signal) +
                                         (touched_.empty() ? " before its first change" : "") +
                                         (next != nullptr ? " (next: " + next->summary + ")" : std::string()));
}

void PolicyRun::end_without_proof() {
  if (state_ != State::active || current() != nullptr) return;
  state_ = State::verified;
  cause_ = Verdict::converged;
}

void PolicyRun::end_verify(verify::Verdict verdict, const std::string& summary, bool rollback_on_inconclusive) {
  end(StepEnd::done(json::object{{"verdict", std::string(verify::to_string(verdict))}, {"summary", summary}}));
  if (!journal_ok_) return;  // could not record the verdict: the run goes to its rollback
  if (verdict == verify::Verdict::verified) {
    state_ = State::verified;
  } else if (verdict == verify::Verdict::inconclusive && !rollback_on_inconclusive) {
    state_ = State::verified;  // kept by the policy's choice; reported as inconclusive
    cause_ = Verdict::inconclusive;
  } else {
    fail(verdict_of(verdict), {});
  }
}

// ---- rollback ------------------------------------------------------------------------------

report::RollbackCause PolicyRun::rollback_cause() const {
  if (interrupted_) return report::RollbackCause::interrupted;
  if (apply_failed_) return report::RollbackCause::apply_failed;
  if (cause_) {
    if (auto c = report::rollback_cause_of(*cause_)) return *c;
  }
  return report::RollbackCause::conflict;
}

void PolicyRun::rollback_begin() {
  checked(journal_.rollback_begin(std::string(report::to_string(rollback_cause()))), "the start of the rollback");
}

void PolicyRun::undo_begin(std::size_t i) {
  const auto& s = step(i);
  checked(journal_.step_begin({journal::StepPhase::rollback, i, std::string(plan::to_string(s.kind())), plan_->host,
                               plan::step_to_json(s).as_object()}),
          "the start of undoing '" + s.summary + "'");
}

void PolicyRun::undo_end(std::size_t i, const Status& outcome) {
  const auto& summary = step(i).summary;
  if (!outcome) {
    rollback_ok_ = false;
    error("rollback of '" + summary + "': " + outcome.error().what);
    checked(journal_.step_failed(journal::StepPhase::rollback, i, outcome.error().what), "a failed undo");
  } else {
    entry_mut().rolled_back.push_back(summary);
    checked(journal_.step_done(journal::StepPhase::rollback, i), "the end of undoing '" + summary + "'");
  }
}

void PolicyRun::restored(std::string check) {
  entry_mut().restored_checks.push_back(std::move(check));
}

void PolicyRun::not_restored(std::string what) {
  rollback_ok_ = false;
  error(std::move(what));
}

void PolicyRun::rollback_done() {
  checked(journal_.rollback_done(rollback_ok_, rollback_ok_ ? "" : "see errors"), "the end of the rollback");
}

// ---- recover -------------------------------------------------------------------------------

PolicyRun::Resumed PolicyRun::resume(const journal::RunReplay& run) {
  const auto& steps = plan_->steps;
  // A run whose verification already said "verified" only missed its last record.
  bool finished = false;
  for (const auto& s : run.steps) {
    if (plan::step_kind_from(s.kind) == plan::StepKind::prove_path && s.state == journal::StepState::done) {
      const auto* v = s.result.if_contains("verdict");
      finished = v != nullptr && v->is_string() && report::verdict_from(v->get_string()) == Verdict::verified;
    }
  }
  // A plan with nothing to prove (only a comment written over a mount left as it is) whose
  // steps all ended also only missed its last record.
  const bool provable = std::any_of(steps.begin(), steps.end(),
                                    [](const plan::Step& s) { return s.kind() == plan::StepKind::prove_path; });
  if (!provable && !steps.empty() && run.completed_steps().size() == steps.size()) finished = true;
  if (finished) {
    for (const auto& s : run.steps) {
      if (s.step < steps.size() && steps[s.step].kind() != plan::StepKind::prove_path)
        entry_mut().changes.push_back(change_of(steps[s.step]));
    }
    state_ = State::verified;
    if (!provable) cause_ = Verdict::converged;
    return Resumed::finished;
  }
  // Everything else is undone: every apply step that began, unless it changed nothing or its
  // inverse already ran. A step is undone as its begin record says it ran (a guest's shared
  // fstab write, narrowed to the policies that reached it), which may differ from the plan.
  for (const auto& s : run.steps) {
    if (s.step >= steps.size()) continue;
    if (plan::step_kind_from(s.kind) == plan::StepKind::change_fstab && !s.data.empty()) {
      auto began = plan::step_from_json(s.data);
      if (began && began->kind() == plan::StepKind::change_fstab) as_run_.insert_or_assign(s.step, std::move(*began));
    }
    // A record of an older pathwarden without `changed_nothing` is undone: its inverse checks first.
    if (s.state == journal::StepState::failed && s.changed_nothing) continue;
    const auto* back = run.find(journal::StepPhase::rollback, s.step);
    if (back != nullptr && back->state == journal::StepState::done) continue;
    if (std::find(touched_.begin(), touched_.end(), s.step) == touched_.end()) touched_.push_back(s.step);
  }
  std::sort(touched_.begin(), touched_.end());
  state_ = State::failed;
  interrupted_ = true;
  if (touched_.empty()) {
    // Nothing was changed: said as a reconcile stopped before its first change says it
    // (precondition-failed, exit 3), never as a rollback it did not do.
    error("the run was stopped before its first change: nothing to undo; the next reconcile plans it again");
    return Resumed::nothing_to_undo;
  }
  return Resumed::to_undo;
}

// ---- the end -------------------------------------------------------------------------------

bool PolicyRun::finish() {
  auto& pr = entry_mut();
  RunEnd end = RunEnd::ended_untouched;
  if (!rollback_ok_) {
    end = RunEnd::rollback_failed;
  } else if (state_ == State::verified) {
    end = cause_ == Verdict::inconclusive ? RunEnd::kept_inconclusive
          : cause_ == Verdict::converged  ? RunEnd::without_proof
                                          : RunEnd::verified;
  } else if (state_ == State::conflict) {
    end = RunEnd::replanned;
  } else if (!touched_.empty()) {
    end = RunEnd::rolled_back;
    pr.cause = rollback_cause();
    pr.changes.clear();
  }
  pr.verdict = policy_verdict(plan_->state, end, cause_);
  if (rollback_ok_ && journal_ok_) {
    checked(journal_.run_finished(json::object{{"policy", pr.policy}, {"verdict", report::to_string(pr.verdict)}}),
            "the run's end");
  }
  // A journal that missed a record after a step began cannot be trusted to say what is undone:
  // recover re-runs the inverses, which check what is really there first.
  if (!rollback_ok_ || (!journal_ok_ && !touched_.empty())) {
    error("journal " + journal_.describe() + " left for 'pathwarden recover'");
    return true;
  }
  return false;
}

bool checks_restored_state(const plan::PolicyPlan& p) {
  for (const auto& s : p.steps) {
    if (const auto* v = std::get_if<plan::ProvePath>(&s.action)) return v->verify_restored;
  }
  return true;
}

}  // namespace pw::reconcile
