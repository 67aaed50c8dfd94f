#include "reconcile/policy_run.hpp"

#include "reconcile/run_reports.hpp"

namespace pw::reconcile {
namespace json = boost::json;
using report::Verdict;

void PolicyRun::fail(Verdict verdict, std::string error) {
  state = State::failed;
  cause = verdict;
  if (!error.empty()) report->errors.push_back(std::move(error));
}

void PolicyRun::failed_untouched(const std::string& why, std::string error) {
  failed_step(std::string(kRefused) + why);
  if (!touched.empty() && touched.back() == next) touched.pop_back();
  fail(Verdict::precondition_failed, std::move(error));
}

void PolicyRun::refused(const std::string& why, std::string note) {
  failed_step(std::string(kRefused) + why);
  if (!touched.empty() && touched.back() == next) touched.pop_back();
  if (state == State::active) state = State::conflict;
  report->notes.push_back(std::move(note));
}

bool PolicyRun::checked(Status st, std::string_view what) {
  if (st) return true;
  if (journal_ok) {
    report->errors.push_back("journal " + (journal ? journal->describe() : std::string()) + ": cannot record " +
                             std::string(what) + ": " + st.error().to_string() + "; the run stops here");
  }
  journal_ok = false;
  // What began is undone; a run already rolling back goes on (its inverses check what is there).
  if (state == State::active || state == State::verified) {
    state = State::failed;
    cause = Verdict::precondition_failed;
  }
  return false;
}

bool PolicyRun::begin(const plan::Step& step) {
  if (!journal) return true;
  if (!checked(journal->step_begin({journal::StepPhase::apply, next, std::string(plan::to_string(step.kind())),
                                    plan->host, plan::step_to_json(step).as_object()}),
               "the start of '" + step.summary + "'")) {
    return false;  // never started: nothing of it to undo
  }
  touched.push_back(next);
  return true;
}

bool PolicyRun::begin_as(plan::Step step) {
  auto& kept = as_run.insert_or_assign(next, std::move(step)).first->second;
  if (begin(kept)) return true;
  as_run.erase(next);
  return false;
}

void PolicyRun::done(json::object result) {
  const auto& step = this->step(next);
  if (step.kind() != plan::StepKind::verify) report->changes.push_back(change_of(step));  // a proof, not a change
  if (journal)
    checked(journal->step_done(journal::StepPhase::apply, next, std::move(result)),
            "the end of '" + step.summary + "'");
  ++next;
}

void PolicyRun::failed_step(const std::string& error) {
  if (journal) checked(journal->step_failed(journal::StepPhase::apply, next, error), "a failed step");
}

report::RollbackCause PolicyRun::rollback_cause() const {
  if (interrupted) return report::RollbackCause::interrupted;
  if (cause) {
    if (auto c = report::rollback_cause_of(*cause)) return *c;
  }
  return report::RollbackCause::conflict;
}

void PolicyRun::rollback_begin() {
  if (journal)
    checked(journal->rollback_begin(std::string(report::to_string(rollback_cause()))), "the start of the rollback");
}

void PolicyRun::rollback_step_begin(std::size_t step) {
  if (!journal) return;
  const auto& s = this->step(step);
  checked(journal->step_begin({journal::StepPhase::rollback, step, std::string(plan::to_string(s.kind())), plan->host,
                               plan::step_to_json(s).as_object()}),
          "the start of undoing '" + s.summary + "'");
}

void PolicyRun::rollback_step_end(std::size_t step, const std::optional<std::string>& error) {
  const auto& summary = this->step(step).summary;
  if (error) {
    rollback_ok = false;
    report->errors.push_back("rollback of '" + summary + "': " + *error);
    if (journal) checked(journal->step_failed(journal::StepPhase::rollback, step, *error), "a failed undo");
  } else {
    report->rolled_back.push_back(summary);
    if (journal)
      checked(journal->step_done(journal::StepPhase::rollback, step), "the end of undoing '" + summary + "'");
  }
}

void PolicyRun::rollback_done() {
  if (journal) checked(journal->rollback_done(rollback_ok, rollback_ok ? "" : "see errors"), "the end of the rollback");
}

bool PolicyRun::finish() {
  auto& pr = *report;
  if (!rollback_ok) {
    pr.verdict = Verdict::rollback_failed;
  } else if (state == State::verified) {
    pr.verdict = cause.value_or(Verdict::verified);
  } else if (state == State::conflict) {
    pr.verdict = Verdict::precondition_failed;  // replaced by the next round's outcome when re-planned
  } else if (!touched.empty()) {
    pr.verdict = Verdict::rolled_back;
    pr.cause = rollback_cause();
    pr.changes.clear();
  } else {
    pr.verdict = cause.value_or(Verdict::precondition_failed);
  }
  if (!journal) return false;
  if (rollback_ok && journal_ok) {
    checked(journal->run_finished(json::object{{"policy", pr.policy}, {"verdict", report::to_string(pr.verdict)}}),
            "the run's end");
  }
  // A journal that missed a record after a step began cannot be trusted to say what is undone:
  // recover re-runs the inverses, which check what is really there first.
  if (!rollback_ok || (!journal_ok && !touched.empty())) {
    pr.errors.push_back("journal " + journal->describe() + " left for 'pathwarden recover'");
    return true;
  }
  return false;
}

bool checks_restored_state(const plan::PolicyPlan& p) {
  for (const auto& s : p.steps) {
    if (const auto* v = std::get_if<plan::VerifyPath>(&s.action)) return v->verify_restored;
  }
  return true;
}

}  // namespace pw::reconcile
