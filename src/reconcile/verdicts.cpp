// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/verdicts.hpp"

namespace pw::reconcile {
using plan::PolicyState;
using report::Verdict;

namespace {

// A pass that changed nothing: what the plan found is the verdict.
Verdict planned(PolicyState state) {
  switch (state) {
    case PolicyState::converged:
      return Verdict::converged;
    case PolicyState::changes:  // only when checking: a change to make is drift
    case PolicyState::drift:
      return Verdict::drift;
    case PolicyState::unobserved:
      return Verdict::unobserved;  // never drift: nothing is known
    case PolicyState::precondition_failed:
      return Verdict::precondition_failed;
  }
  return Verdict::precondition_failed;
}

}  // namespace

Verdict policy_verdict(PolicyState state, RunEnd end, std::optional<Verdict> cause) {
  switch (end) {
    case RunEnd::not_run:
    case RunEnd::checked:
      return planned(state);
    case RunEnd::held:
      // A guest that did not answer stays unobserved; anything else waits for recover.
      return state == PolicyState::unobserved ? Verdict::unobserved : Verdict::precondition_failed;
    case RunEnd::not_applied:
      return Verdict::precondition_failed;
    case RunEnd::verified:
      return Verdict::verified;
    case RunEnd::kept_inconclusive:
      return Verdict::inconclusive;
    case RunEnd::without_proof:
      return Verdict::converged;
    case RunEnd::replanned:
      return Verdict::precondition_failed;  // replaced by the next round's outcome when re-planned
    case RunEnd::rolled_back:
      return Verdict::rolled_back;
    case RunEnd::ended_untouched:
      return cause.value_or(Verdict::precondition_failed);
    case RunEnd::rollback_failed:
      return Verdict::rollback_failed;
  }
  return Verdict::precondition_failed;
}

}  // namespace pw::reconcile
