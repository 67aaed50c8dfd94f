#pragma once
// The verify phase: the adaptive probe. Every run at its verify step probes at once (one
// playbook for all guests); a measurement too small or too noisy to decide is grown or taken
// again, up to EngineOptions::max_measurements, then the verdict decides the run's fate.
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
