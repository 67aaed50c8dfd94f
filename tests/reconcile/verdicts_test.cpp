// SPDX-License-Identifier: GPL-3.0-or-later
// The one table: plan state × how a run ended → verdict (reconcile/verdicts.hpp), and verdict →
// exit code with the rows' precedence (report/run_report.hpp).
#include "reconcile/verdicts.hpp"

#include <catch2/catch.hpp>

#include "report/run_report.hpp"

using namespace pw;
using plan::PolicyState;
using reconcile::policy_verdict;
using reconcile::RunEnd;
using report::Verdict;

TEST_CASE("a pass that changes nothing gives the plan's own verdict; could not observe is never drift") {
  for (auto end : {RunEnd::not_run, RunEnd::checked}) {
    CHECK(policy_verdict(PolicyState::converged, end) == Verdict::converged);
    CHECK(policy_verdict(PolicyState::drift, end) == Verdict::drift);
    CHECK(policy_verdict(PolicyState::unobserved, end) == Verdict::unobserved);
    CHECK(policy_verdict(PolicyState::precondition_failed, end) == Verdict::precondition_failed);
  }
  CHECK(policy_verdict(PolicyState::changes, RunEnd::checked) == Verdict::drift);  // --check: a change to make
  CHECK(policy_verdict(PolicyState::unobserved, RunEnd::held) == Verdict::unobserved);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::held) == Verdict::precondition_failed);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::not_applied) == Verdict::precondition_failed);
}

TEST_CASE("a run's end gives its verdict; one that failed before any change keeps its cause") {
  CHECK(policy_verdict(PolicyState::changes, RunEnd::verified) == Verdict::verified);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::kept_inconclusive) == Verdict::inconclusive);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::without_proof) == Verdict::converged);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::replanned) == Verdict::precondition_failed);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::rolled_back, Verdict::wrong_path) == Verdict::rolled_back);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::rollback_failed) == Verdict::rollback_failed);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::ended_untouched) == Verdict::precondition_failed);
  CHECK(policy_verdict(PolicyState::changes, RunEnd::ended_untouched, Verdict::wrong_path) == Verdict::wrong_path);
}

namespace {

report::RunReport with(std::initializer_list<std::pair<Verdict, bool>> policies) {
  report::RunReport r;
  for (const auto& [verdict, changed] : policies) {
    report::PolicyReport p;
    p.verdict = verdict;
    if (changed) p.changes.push_back(report::Change{});
    r.policies.push_back(p);
  }
  return r;
}

}  // namespace

TEST_CASE("each verdict's exit code, and the first row of the table wins when several apply") {
  CHECK(report::exit_code(with({})) == 0);
  CHECK(report::exit_code(with({{Verdict::converged, false}, {Verdict::verified, false}})) == 0);
  CHECK(report::exit_code(with({{Verdict::verified, true}})) == 2);
  CHECK(report::exit_code(with({{Verdict::converged, true}})) == 2);  // a comment written
  CHECK(report::exit_code(with({{Verdict::drift, false}})) == 3);
  CHECK(report::exit_code(with({{Verdict::precondition_failed, false}})) == 3);
  CHECK(report::exit_code(with({{Verdict::inconclusive, false}})) == 3);  // found by a check
  CHECK(report::exit_code(with({{Verdict::inconclusive, true}})) == 4);   // a change kept unproven
  CHECK(report::exit_code(with({{Verdict::rolled_back, false}})) == 4);
  CHECK(report::exit_code(with({{Verdict::wrong_path, false}})) == 4);
  CHECK(report::exit_code(with({{Verdict::rollback_failed, false}})) == 5);
  CHECK(report::exit_code(with({{Verdict::unobserved, false}})) == 6);

  CHECK(report::exit_code(with({{Verdict::drift, false}, {Verdict::unobserved, false}})) == 6);
  CHECK(report::exit_code(with({{Verdict::unobserved, false}, {Verdict::wrong_path, false}})) == 4);
  CHECK(report::exit_code(with({{Verdict::verified, true}, {Verdict::drift, false}})) == 3);
  auto stopped = with({{Verdict::rolled_back, false}});
  stopped.stopped_by_signal = 15;
  CHECK(report::exit_code(stopped) == 143);
  stopped.journal_left = true;  // recover first
  CHECK(report::exit_code(stopped) == 5);
  // An output asked for and not written: over drift and success, under a failed or unseen path.
  CHECK(report::exit_code(with({{Verdict::verified, true}}), true) == 7);
  CHECK(report::exit_code(with({{Verdict::drift, false}}), true) == 7);
  CHECK(report::exit_code(with({{Verdict::unobserved, false}}), true) == 6);
  CHECK(report::exit_code(with({{Verdict::rolled_back, false}}), true) == 4);
}

TEST_CASE("the exit-code list the help and the man page print has every code once, in order") {
  const auto list = report::exit_code_list();
  std::vector<std::string> codes;
  for (const auto& line : list) codes.push_back(line.code);
  CHECK(codes == std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "128+N"});
  for (const auto& line : list) CHECK_FALSE(line.meaning.empty());
  const auto text = report::exit_code_lines("  ");
  CHECK(text.starts_with("  0     nothing to do"));
  CHECK(text.find("\n  128+N stopped by signal N") != std::string::npos);
  CHECK_FALSE(text.ends_with("\n"));
}

TEST_CASE("a rollback's cause is said by the layer that failed") {
  using report::RollbackCause;
  CHECK(report::cause_label(RollbackCause::wrong_path) == "verification: wrong-path");
  CHECK(report::cause_label(RollbackCause::precondition_failed) == "verification: precondition-failed");
  CHECK(report::cause_label(RollbackCause::apply_failed) == "apply failed");
  CHECK(report::cause_label(RollbackCause::interrupted) == "interrupted");  // never "verification: interrupted"
  CHECK(report::cause_label(RollbackCause::conflict) == "conflict");
}
