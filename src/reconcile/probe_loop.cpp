#include "reconcile/probe_loop.hpp"

#include <algorithm>
#include <boost/json/object.hpp>

#include "plan/guest_requests.hpp"
#include "reconcile/evidence.hpp"

namespace pw::reconcile {

void ProbeLoop::run(const std::vector<PolicyRun*>& batch) {
  struct Measuring {
    PolicyRun* w;
    const plan::VerifyPath* v;
    std::uint64_t bytes;
    int probes = 0;
    std::optional<verify::VerificationResult> result;
    bool finished = false;
  };
  std::vector<Measuring> m;
  for (auto* w : batch) {
    const auto& step = *w->current();
    if (!w->begin(step)) continue;
    const auto& v = std::get<plan::VerifyPath>(step.action);
    m.push_back({w, &v, v.probe_bytes, 0, std::nullopt, false});
  }
  for (int round = 0; round < ctx_.o.max_measurements; ++round) {
    std::vector<guest::ProbeRequest> probes;
    for (auto& x : m) {
      if (x.finished) continue;
      probes.push_back(plan::probe_request(*x.v, x.bytes));
      ctx_.progress(x.w->plan->policy, "probe", "probing " + x.v->probe_file, 0, x.bytes);
    }
    if (probes.empty()) break;
    auto outcomes = ctx_.d.guests.probe(probes);
    for (auto& x : m) {
      if (x.finished) continue;
      ++x.probes;
      auto it = outcomes.find(x.v->host);
      if (it == outcomes.end() || !it->second) {
        const std::string why = it == outcomes.end() ? "no result" : describe(it->second.error());
        x.w->report->errors.push_back("probe: " + why);
        verify::VerificationResult r;
        r.verdict = verify::Verdict::inconclusive;
        r.summary = "the probe failed: " + why;
        x.result = r;
        x.finished = true;
        continue;
      }
      x.result = verify::verify_path(probe_input(*x.v, *it->second));
      const auto& advice = x.result->advice;
      if (advice.next == verify::NextStep::grow_probe && advice.probe_bytes > x.bytes &&
          x.bytes < x.v->max_probe_bytes) {
        x.bytes = std::min(advice.probe_bytes, x.v->max_probe_bytes);
        x.w->report->notes.push_back("probe grown: " + advice.reason);
      } else if (advice.next == verify::NextStep::remeasure) {
        x.w->report->notes.push_back("measured again: " + advice.reason);
      } else {
        x.finished = true;
      }
    }
  }
  for (auto& x : m) {
    auto& w = *x.w;
    if (!x.result) continue;
    w.report->verification = verification_report(*x.result, *x.v, x.bytes, x.probes);
    const auto v = x.result->verdict;
    // The verdict is on record before it decides anything: recover trusts a recorded "verified".
    w.done(boost::json::object{{"verdict", std::string(verify::to_string(v))}, {"summary", x.result->summary}});
    if (!w.journal_ok) continue;   // could not record the verdict: done() sent the run to rollback
    if (v == verify::Verdict::verified) {
      w.state = PolicyRun::State::verified;
    } else if (v == verify::Verdict::inconclusive && !x.v->rollback_on_inconclusive) {
      w.state = PolicyRun::State::verified;  // kept by the policy's choice; reported as inconclusive
      w.cause = report::Verdict::inconclusive;
    } else {
      w.fail(verdict_of(v), {});
    }
  }
}

}  // namespace pw::reconcile
