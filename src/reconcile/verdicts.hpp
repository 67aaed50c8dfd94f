// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one table of a policy's verdict: its plan state × how its run ended → the verdict. Every
// place that gives a policy its verdict (a pass that only plans, a held policy, a run's finish,
// apply's refusal of a stale plan) asks here. A verdict's exit code is report::exit_code_of
// (report/run_report.hpp), from the table the help and the man page print.
#include <optional>

#include "plan/model.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

// How a policy's pass ended beyond its plan: the table's columns.
enum class RunEnd {
  not_run,            // nothing to apply, or the plan blocks it: the plan state says it all
  checked,            // `reconcile --check`: planned, nothing applied (a change to make is drift)
  held,               // an unfinished run on its guest or VM holds it until recover
  not_applied,        // `apply` refused the plan (stale, a restart window closed, a privilege gone)
  verified,           // every step done and the path proved
  kept_inconclusive,  // done, the proof inconclusive and the policy keeps such a change
  without_proof,      // every step done with nothing to prove (only a comment written)
  replanned,          // a step refused because reality moved: re-planned (or given up after the rounds)
  rolled_back,        // what began was undone; the cause says why
  ended_untouched,    // failed before anything changed; the cause is the verdict
  rollback_failed,    // an undo failed, or the journal stays for recover
};

// The cause matters only for ended_untouched (precondition-failed when none is known).
report::Verdict policy_verdict(plan::PolicyState state, RunEnd end, std::optional<report::Verdict> cause = {});

}  // namespace pw::reconcile
