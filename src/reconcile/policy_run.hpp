// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One policy's run through apply, verify and rollback, as a state machine:
//
//   active ── every step done, the path proved ──────────────────► verified
//     │  ── a step refused (reality moved; nothing changed) ─────► conflict ─► rollback ─► re-planned
//     └─ a step failed, stop(), interrupt(), a proof not kept ───► failed ───► rollback ─► rolled-back
//
// The units that carry steps out (StepRunner, ProbeLoop, Rollback, Recovery) say how a step or
// its undo ended with a typed value (StepEnd, a Status); only the methods here change the run's
// state, its journal and its report entry, and finish() turns the state into the verdict through
// the one table (verdicts.hpp). Every journal write is checked: a journal that cannot be written
// stops the run (what was begun is rolled back) and leaves it for `pathwarden recover`.
// Runs are made in one place, RunSet (run_set.hpp), for reconcile, apply and recover alike.
#include <boost/json/object.hpp>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "journal/guest_lock.hpp"
#include "journal/journal.hpp"
#include "plan/model.hpp"
#include "report/run_report.hpp"
#include "verify/verifier.hpp"

namespace pw::reconcile {

// How the current step ended, as the unit that carried it out saw it.
struct StepEnd {
  enum class Kind {
    done,       // it did what it should; `result` goes on record
    refused,    // reality moved under it (a digest, an fstab hash, a VM's state): nothing changed,
                // the run's other steps are undone and the policy re-planned
    untouched,  // it failed before it changed anything: nothing of it to undo; the run fails
    failed,     // it failed, perhaps half-way: its inverse (which checks first) undoes it
  };
  Kind kind = Kind::done;
  std::string detail;          // the journal's record of a failure: the port's error
  std::string message;         // the report's: an error (untouched, failed) or a note (refused)
  boost::json::object result;  // done: what the journal keeps of it

  static StepEnd done(boost::json::object result = {}) { return {Kind::done, {}, {}, std::move(result)}; }
  static StepEnd refused(std::string detail, std::string note) {
    return {Kind::refused, std::move(detail), std::move(note), {}};
  }
  static StepEnd untouched(std::string detail, std::string error) {
    return {Kind::untouched, std::move(detail), std::move(error), {}};
  }
  static StepEnd failed(std::string detail, std::string error) {
    return {Kind::failed, std::move(detail), std::move(error), {}};
  }
};

class PolicyRun {
 public:
  enum class State {
    active,    // steps left to run
    verified,  // done (or kept inconclusive by the policy's choice)
    failed,    // to roll back; the cause says why
    conflict,  // reality moved under a step, which refused: roll back the rest, then re-plan
  };
  // What recover found in the journal it resumed (resume()).
  enum class Resumed {
    finished,         // the run had ended well and only missed its last record: finish() ends it
    nothing_to_undo,  // no step had changed anything
    to_undo,          // the begun steps wait for the rollback
  };

  // Made by RunSet only: `entry` is this policy's index in `report.policies`.
  PolicyRun(const plan::PolicyPlan& plan, report::RunReport& report, std::size_t entry,
            std::shared_ptr<journal::GuestLock> lock, journal::Journal journal);

  const plan::PolicyPlan& plan() const { return *plan_; }
  const std::string& policy() const { return plan_->policy; }
  const std::string& host() const { return plan_->host; }
  State state() const { return state_; }
  const report::PolicyReport& entry() const { return report_->policies[entry_]; }
  // The next step to run; nullptr when every step is done.
  const plan::Step* current() const { return next_ < plan_->steps.size() ? &plan_->steps[next_] : nullptr; }
  // The next step, for a unit handed the runs that stand at its kind (at(kind)): a run with no
  // next step is a programmer error (std::logic_error), never a null dereference.
  const plan::Step& current_step() const;
  // Its action, of the kind the unit runs (std::bad_variant_access if it is another).
  template <class Action>
  const Action& current_action() const {
    return std::get<Action>(current_step().action);
  }
  // Step i as it was begun (a guest's shared fstab write narrowed to the writers that reached
  // it, plan/guest_writes.hpp), else as planned.
  const plan::Step& step(std::size_t i) const;
  // Active and standing at a step of this kind.
  bool at(plan::StepKind kind) const;
  // The steps begun, in order: the rollback undoes them.
  const std::vector<std::size_t>& touched() const { return touched_; }
  bool touched_any(plan::StepKind kind) const;
  bool rollback_ok() const { return rollback_ok_; }
  // Ended in conflict with its rollback done: the engine re-plans it (the note says so).
  bool to_replan();

  // ---- apply ----
  // Records the start of the current step (as planned, or as it really runs: begin_as); it must
  // succeed before the step changes anything. False: not on record, the run is failing.
  bool begin();
  bool begin_as(plan::Step step);
  // The current step's end: done advances to the next step; the others send the run on its way
  // (conflict or failed) with the journal saying whether anything may have changed.
  void end(StepEnd end);
  // A precondition found before the current step began (a restart window closed), or after a
  // step was done (a NIC that did not come back): the run fails and what began is undone.
  void stop(std::string error);
  // A stop asked for (SIGTERM, SIGINT) at a safe point: an active run goes to its rollback.
  void interrupt(int signal);
  // Every step done with no proof to make (only a comment written, the mount left as it is):
  // nothing on the path changed, the run ends converged.
  void end_without_proof();
  // The verify step's outcome, on record before it decides anything (recover trusts a recorded
  // "verified"): verified ends the run; inconclusive too when the policy keeps it; otherwise the
  // run's change is rolled back with that verdict as the cause.
  void end_verify(verify::Verdict verdict, const std::string& summary, bool rollback_on_inconclusive);
  void report_verification(report::Verification v);
  void note(std::string text);
  void error(std::string text);

  // ---- rollback ----
  void rollback_begin();
  void undo_begin(std::size_t step);
  void undo_end(std::size_t step, const Status& outcome);
  // The restored state read back: a check that held, or one that did not (the rollback failed).
  void restored(std::string check);
  void not_restored(std::string what);
  void rollback_done();

  // ---- recover ----
  // Reads the interrupted run the journal tells of: which steps began (as they ran) and whether
  // it had in fact ended. Then the run is failed (interrupted) unless it was finished.
  Resumed resume(const journal::RunReplay& run);

  // The last record, and the report's verdict from the run's state (verdicts.hpp). True when the
  // journal stays for `pathwarden recover`.
  bool finish();

 private:
  report::PolicyReport& entry_mut() { return report_->policies[entry_]; }
  // Every write: a failure is remembered, reported, and stops the run.
  bool checked(Status st, std::string_view what);
  void fail(report::Verdict cause, std::string error);
  void failed_record(const std::string& detail, bool changed_nothing);
  report::RollbackCause rollback_cause() const;

  const plan::PolicyPlan* plan_;
  report::RunReport* report_;
  std::size_t entry_;
  std::shared_ptr<journal::GuestLock> lock_;  // held for the run's life
  journal::Journal journal_;
  std::size_t next_ = 0;
  std::vector<std::size_t> touched_;
  std::map<std::size_t, plan::Step> as_run_;  // steps as begun where that differs from the plan
  State state_ = State::active;
  std::optional<report::Verdict> cause_;  // the verdict that sent it to rollback, or kept it
  bool interrupted_ = false;              // killed or stopped: the rollback's cause is "interrupted"
  bool apply_failed_ = false;             // a step failed while applying: the cause is "apply-failed"
  bool rollback_ok_ = true;
  bool journal_ok_ = true;  // every record of this run reached the journal
};

// Whether a rollback of this plan ends by checking the old state is back (the policy may opt out).
bool checks_restored_state(const plan::PolicyPlan& p);

}  // namespace pw::reconcile
