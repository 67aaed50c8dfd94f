#include "reconcile/probe_loop.hpp"

#include <boost/json/object.hpp>

#include "reconcile/evidence.hpp"
#include "reconcile/measure.hpp"

namespace pw::reconcile {

void ProbeLoop::run(const std::vector<PolicyRun*>& batch) {
  std::vector<PolicyRun*> runs;
  std::vector<MeasureRequest> requests;
  for (auto* w : batch) {
    const auto& step = *w->current();
    if (!w->begin(step)) continue;
    runs.push_back(w);
    requests.push_back({&std::get<plan::VerifyPath>(step.action), w->plan->policy});
  }
  const auto measured = measure(ctx_, requests);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto& w = *runs[i];
    const auto& m = measured[i];
    const auto& v = *requests[i].path;
    for (const auto& n : m.notes) w.report->notes.push_back(n);
    for (const auto& e : m.errors) w.report->errors.push_back(e);
    if (!m.result) continue;
    w.report->verification = verification_of(m, v);
    const auto verdict = m.result->verdict;
    // The verdict is on record before it decides anything: recover trusts a recorded "verified".
    w.done(boost::json::object{{"verdict", std::string(verify::to_string(verdict))}, {"summary", m.result->summary}});
    if (!w.journal_ok) continue;  // could not record the verdict: done() sent the run to rollback
    if (verdict == verify::Verdict::verified) {
      w.state = PolicyRun::State::verified;
    } else if (verdict == verify::Verdict::inconclusive && !v.rollback_on_inconclusive) {
      w.state = PolicyRun::State::verified;  // kept by the policy's choice; reported as inconclusive
      w.cause = report::Verdict::inconclusive;
    } else {
      w.fail(verdict_of(verdict), {});
    }
  }
}

}  // namespace pw::reconcile
