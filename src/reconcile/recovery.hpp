// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `pathwarden recover`: finishes or undoes every run the journals show interrupted. A run whose
// verification was recorded "verified" only missed its last record and is finished; any other
// is rolled back from its journal alone (the plan is in it), never re-decided.
#include <vector>

#include "reconcile/context.hpp"
#include "reconcile/policy_run.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

class Recovery {
 public:
  explicit Recovery(const Context& ctx) : ctx_(ctx) {}
  report::RunReport run();

 private:
  // Rolls back the runs that wait for it, guest by guest in journal order.
  void undo(std::vector<PolicyRun*> runs, report::RunReport& rep);

  const Context& ctx_;
};

}  // namespace pw::reconcile
