// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/probe_loop.hpp"

#include "reconcile/evidence.hpp"
#include "reconcile/measure.hpp"

namespace pw::reconcile {

void ProbeLoop::run(const std::vector<PolicyRun*>& batch) {
  std::vector<PolicyRun*> runs;
  std::vector<MeasureRequest> requests;
  for (auto* run : batch) {
    if (!run->begin()) continue;
    runs.push_back(run);
    requests.push_back({&run->current_action<plan::ProvePath>(), run->policy()});
  }
  const auto measured = measure(ctx_, requests);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto& run = *runs[i];
    const auto& m = measured[i];
    const auto& v = *requests[i].path;
    for (const auto& n : m.notes) run.note(n);
    for (const auto& e : m.errors) run.error(e);
    if (!m.result) {  // never probed: nothing proves the change, which is undone
      run.end(StepEnd::failed("never probed", "verify: the path was never probed"));
      continue;
    }
    run.report_verification(verification_of(m, v));
    run.end_verify(m.result->verdict, m.result->summary, v.rollback_on_inconclusive);
  }
}

}  // namespace pw::reconcile
