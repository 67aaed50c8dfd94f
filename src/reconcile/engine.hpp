// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The reconcile loop (controller-runtime's shape), thin: observe every policy's guest in one
// pass (Observer), plan (pure, plan/planner), apply the plan step by step under a journal and a
// per-guest lock (StepRunner, PolicyRun), verify with byte counters (ProbeLoop), roll back what
// cannot be proven (Rollback), report. Conflicts (a Proxmox digest or an fstab hash that moved)
// are re-observed and re-planned, never overwritten. `pathwarden verify` is the Audit, `recover`
// the Recovery; each unit is a file of its own named for its job.
//
// Component: reconcile. Depends on plan, policy, guest (the port), proxmox (the API), journal,
// report, verify, timing; never on an adapter (src/ansible), which the controller wires in.
#include <map>
#include <span>
#include <string>
#include <vector>

#include "plan/model.hpp"
#include "plan/planner.hpp"
#include "policy/model.hpp"
#include "reconcile/context.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

class Engine {
 public:
  Engine(Dependencies deps, EngineOptions options) : ctx_{std::move(deps), std::move(options)} {}

  // One pass over Proxmox (one list call, one config read per VM) and one facts run.
  std::vector<plan::Observation> observe(std::span<const policy::StoragePath> policies);

  // The observations are taken: VMs a plan acts on get their live state read into them (Observer::live_status).
  plan::Plan make_plan(std::span<const policy::StoragePath> policies, std::vector<plan::Observation> observed);

  // observe + make_plan in batches of options.observe_batch guests: only the plans are kept.
  plan::Plan observe_and_plan(std::span<const policy::StoragePath> policies);

  // reconcile: observe, plan, apply, verify, roll back; re-plan conflicts. check_only: stop
  // after planning and report drift.
  report::RunReport reconcile(std::span<const policy::StoragePath> policies, bool check_only);

  // Applies exactly this plan, after checking that reality has not moved since it was made
  // (digests and fstab hashes); refuses otherwise.
  report::RunReport apply(const plan::Plan& plan);

  // `pathwarden verify`: the audit without changes (effective options, queues, connection
  // addresses; a probe only when asked).
  report::RunReport audit(std::span<const policy::StoragePath> policies, bool probe);

  // Finishes or undoes every interrupted run found in the journals.
  report::RunReport recover();

 private:
  plan::PlanningContext planning_context();
  // reconcile --check: observe and plan in batches, keep only the report; nothing is stored.
  report::RunReport check(std::span<const policy::StoragePath> policies);
  // Why a saved plan's policy may not be applied now. Only a stale plan is answered by planning
  // again: a closed window by waiting for it, a missing privilege by granting it.
  struct Refusal {
    enum class Kind { stale, window_closed, privilege };
    Kind kind;
    std::string why;
  };
  std::map<std::string, std::vector<Refusal>, std::less<>> refusals(const plan::Plan& plan);
  // Runs a plan's policies through the phases and rolls back what failed; `conflicted` gets the
  // policies to re-plan.
  void execute(const plan::Plan& plan, report::RunReport& report, std::vector<std::string>* conflicted);

  Context ctx_;
};

}  // namespace pw::reconcile
