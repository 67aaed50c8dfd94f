// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where PolicyRuns are made, for reconcile, apply and recover alike: each with its report entry
// (found by index, so the report's vector may grow under it), its guest's lock (one per guest,
// shared by the guest's runs, held until the set ends) and its journal (started for a new run,
// resumed by recover). A run that cannot be made says why in its report entry.
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "journal/replay.hpp"
#include "plan/model.hpp"
#include "reconcile/context.hpp"
#include "reconcile/policy_run.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

class RunSet {
 public:
  RunSet(const Context& ctx, report::RunReport& report) : ctx_(ctx), report_(report) {}

  // A new run of `policy`, one of `plan`'s, whose report entry is `report.policies[entry]`;
  // nullptr when its guest is busy or its journal cannot be started (the entry says so).
  PolicyRun* start(const plan::Plan& plan, const plan::PolicyPlan& policy, std::size_t entry);
  // recover: the interrupted run `replay` tells of, taken over; nullptr when its guest is busy or
  // its journal cannot be resumed (the entry says so and the journal stays).
  PolicyRun* resume(const journal::RunReplay& replay, const plan::PolicyPlan& policy);

  // The runs made, in the order they were made.
  std::vector<PolicyRun*> runs();

 private:
  std::shared_ptr<journal::GuestLock> lock(const std::string& host, Status& why);
  std::size_t entry_of(const plan::PolicyPlan& policy);

  const Context& ctx_;
  report::RunReport& report_;
  std::deque<PolicyRun> runs_;  // a deque: a run's address holds while others are added
  std::map<std::string, std::shared_ptr<journal::GuestLock>> locks_;
};

}  // namespace pw::reconcile
