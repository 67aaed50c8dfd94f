#pragma once
// One policy's way through apply, verify and rollback: its plan and report entry, its journal
// and guest lock, which steps began (a rollback undoes exactly those) and how it stands.
// Every journal write goes through here and is checked: a journal that cannot be written stops
// the run (what was begun is rolled back) and leaves it for `pathwarden recover`.
#include <boost/json/object.hpp>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "journal/guest_lock.hpp"
#include "journal/journal.hpp"
#include "plan/model.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

// Marks a step_failed record whose step was refused before it changed anything (a digest or
// fstab hash that moved): recover has nothing to undo for it.
inline constexpr std::string_view kRefused = "refused, nothing changed: ";

struct PolicyRun {
  enum class State {
    active,    // steps left to run
    verified,  // done (or kept inconclusive by the policy's choice)
    failed,    // to roll back; `cause` says why
    conflict,  // reality moved under a step, which refused: roll back the rest, then re-plan
  };

  const plan::PolicyPlan* plan = nullptr;
  report::PolicyReport* report = nullptr;
  std::optional<journal::Journal> journal;
  std::shared_ptr<journal::GuestLock> lock;
  std::size_t next = 0;              // next step to run
  std::vector<std::size_t> touched;  // steps begun, in order: the rollback undoes them
  State state = State::active;
  std::optional<report::Verdict> cause;  // verdict that sent it to rollback
  bool interrupted = false;              // recover: the run was killed, cause "interrupted"
  bool rollback_ok = true;
  bool journal_ok = true;  // every record of this run reached the journal

  // Steps as they were begun where that differs from the plan: a guest's shared fstab write
  // narrowed to the writers that reached it (plan/guest_writes.hpp). The journal records them and
  // the rollback undoes them; recover reads them back from the begin records.
  std::map<std::size_t, plan::Step> as_run;

  const plan::Step* current() const { return next < plan->steps.size() ? &plan->steps[next] : nullptr; }
  // Step i as it was begun (as_run), else as planned.
  const plan::Step& step(std::size_t i) const {
    auto it = as_run.find(i);
    return it != as_run.end() ? it->second : plan->steps[i];
  }
  bool at(plan::StepKind kind) const {
    return state == State::active && current() != nullptr && current()->kind() == kind;
  }
  const plan::PolicyPlan& policy() const { return *plan; }
  const std::string& host() const { return plan->host; }

  // Sends the run to rollback (or ends it, when nothing began) with this verdict.
  void fail(report::Verdict verdict, std::string error);
  // The current step refused before changing anything: nothing of it to undo.
  void refused(const std::string& why, std::string note);
  // The current step failed before it changed anything (e.g. the SSH user may not write the
  // backup): nothing of it to undo, and the run fails with this error.
  void failed_untouched(const std::string& why, std::string error);

  // Apply records. begin() must succeed before a step changes anything; a failed write of any
  // record fails the run (its begun steps are rolled back).
  bool begin(const plan::Step& step);
  // begin() for the current step as it really runs, kept in as_run.
  bool begin_as(plan::Step step);
  void done(boost::json::object result = {});  // also advances to the next step
  void failed_step(const std::string& error);

  // Rollback records (rollback_begin, a step's begin/done/failed, rollback_done).
  void rollback_begin();
  void rollback_step_begin(std::size_t step);
  void rollback_step_end(std::size_t step, const std::optional<std::string>& error);
  void rollback_done();

  // The last record, and the report's verdict from the run's state. Returns true when the
  // journal stays for `pathwarden recover`.
  bool finish();

  // The reason rollback_begin records and the report's `cause`.
  report::RollbackCause rollback_cause() const;

 private:
  // Every write: a failure is remembered, reported, and stops the run.
  bool checked(Status st, std::string_view what);
};

// Whether a rollback of this plan ends by checking the old state is back (the policy may opt out).
bool checks_restored_state(const plan::PolicyPlan& p);

}  // namespace pw::reconcile
