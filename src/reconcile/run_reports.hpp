// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A run's report: its frame (ids, times, the policies' revision), one entry per policy, and the
// per-policy results `status` shows, stored when a run ends.
#include <string>

#include "plan/model.hpp"
#include "reconcile/context.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

report::RunReport new_report(const Context& ctx, report::RunMode mode, std::string plan_id);
report::PolicyReport new_entry(const plan::PolicyPlan& p);
// An applied step as the report says it (changes[]): its kind, what it changed, before and after.
report::Change change_of(const plan::Step& step);
// The entry of this policy, added when missing.
report::PolicyReport& report_of(report::RunReport& r, const plan::PolicyPlan& p);
// Stores each policy's outcome for `status`; a failure to store is a warning, the run stands.
// Then prunes the finished journals beyond the retention (EngineOptions::retention).
void remember_results(const Context& ctx, const report::RunReport& r);

}  // namespace pw::reconcile
