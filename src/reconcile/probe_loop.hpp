// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The verify phase: every run at its verify step is measured at once (measure.hpp: the adaptive
// probe with the host's tap counters), then the verdict, on record first, decides the run's fate.
#include <vector>

#include "reconcile/context.hpp"
#include "reconcile/policy_run.hpp"

namespace pw::reconcile {

class ProbeLoop {
 public:
  explicit ProbeLoop(const Context& ctx) : ctx_(ctx) {}
  // Runs the verify step of each run in `batch`; a run whose verdict is not kept goes to failed.
  void run(const std::vector<PolicyRun*>& batch);

 private:
  const Context& ctx_;
};

}  // namespace pw::reconcile
