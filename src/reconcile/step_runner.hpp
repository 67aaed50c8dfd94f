// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The apply phases: each takes every run standing at a step of its kind and carries the step out
// for all of them at once (one Proxmox call per VM, one playbook for all guests). Dispatch is on
// the typed StepKind; each runner reads its own step type out of the variant.
#include <optional>
#include <vector>

#include "plan/model.hpp"
#include "reconcile/context.hpp"
#include "reconcile/policy_run.hpp"

namespace pw::reconcile {

class StepRunner {
 public:
  explicit StepRunner(const Context& ctx) : ctx_(ctx) {}

  // Runs phase `kind` for the runs standing at such a step; the others are left alone.
  void run_phase(plan::StepKind kind, const std::vector<PolicyRun*>& runs);

 private:
  // One VM's NIC steps (planned from one config digest) as one config write.
  void set_nics(const std::vector<PolicyRun*>& group);
  bool wait_for_nic(PolicyRun& run, const plan::SetNic& s);  // after a hot-plug
  void restart(const std::vector<PolicyRun*>& batch);
  void set_channels(const std::vector<PolicyRun*>& batch);
  void change_fstab(const std::vector<PolicyRun*>& batch);
  void move_transport(const std::vector<PolicyRun*>& batch);
  // The one write of a guest's runs at this phase, begun in each run's journal; none when a run
  // could not begin (then nothing is written for any of them).
  std::optional<guest::FstabChange> begin_write(const std::vector<PolicyRun*>& runs);

  const Context& ctx_;
};

}  // namespace pw::reconcile
