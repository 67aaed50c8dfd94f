// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The guest-counters signal: what the guest's interface byte counters, net of each link's
// background, say about one probe, and how to measure again when they cannot tell. Pure.
#include <string>

#include "verify/counters.hpp"
#include "verify/settings.hpp"
#include "verify/verdict.hpp"

namespace pw::verify {

struct CounterVerdict {
  Verdict verdict = Verdict::inconclusive;
  std::string summary;
  ProbeAdvice advice;
  // The intended interface's raw bytes in the window reach the probe's share: it could have
  // carried the probe (the other signals then say whose bytes they were).
  bool consistent = false;
  // Another interface carried, beyond any doubt of its background, more than the probe leaves
  // for others: the probe's bytes may have gone there. Its name.
  std::string elsewhere;
};

CounterVerdict decide_counters(const CounterAnalysis& a, const ProbeRun& probe, const VerifySettings& s);

// Usable for a delta: no reset, present around the probe.
bool measurable(const CounterDelta& d);

}  // namespace pw::verify
