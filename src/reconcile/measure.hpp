// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The adaptive probe, shared by reconcile's verify step and `verify --probe`: every path probes
// at once (one playbook for all guests), with the hypervisor's tap counters read through the API
// just before and just after each probe run; a measurement too small or too noisy to decide is
// grown or taken again, up to EngineOptions::max_measurements.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "plan/model.hpp"
#include "reconcile/context.hpp"
#include "report/run_report.hpp"
#include "verify/verifier.hpp"

namespace pw::reconcile {

struct MeasureRequest {
  const plan::ProvePath* path = nullptr;
  std::string policy;  // for progress events
};

struct Measured {
  std::optional<verify::VerificationResult> result;  // absent: never probed
  std::uint64_t bytes = 0;                           // the last probe's size
  int probes = 0;
  std::vector<std::string> notes;              // "probe grown: ...", "measured again: ..."
  std::vector<std::string> errors;             // a probe that could not run
  std::optional<report::CommitFigure> commit;  // the commit-latency figure, when the policy asks
};

// One result per request, in order. A path that is right but commits slower than the policy's
// min_commit_rate comes back inconclusive: not proven to do what the policy wants.
std::vector<Measured> measure(const Context& ctx, std::span<const MeasureRequest> requests);

// The report's verification of a measurement: verification_report plus the commit figure.
report::Verification verification_of(const Measured& m, const plan::ProvePath& v);

}  // namespace pw::reconcile
