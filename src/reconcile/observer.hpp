// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Observation: what the planner is given. One list call for the whole cluster, one config read
// per VM (GET .../pending: values in effect, pending values and digest at once) while the
// guests' facts are gathered, in batches so memory holds one batch whatever the fleet's size.
#include <functional>
#include <future>
#include <map>
#include <span>
#include <vector>

#include "plan/planner.hpp"
#include "policy/model.hpp"
#include "reconcile/context.hpp"
#include "reconcile/traffic_marks.hpp"

namespace pw::reconcile {

class Observer {
 public:
  explicit Observer(const Context& ctx) : ctx_(ctx) {}

  // Every policy's guest, in one pass.
  std::vector<plan::Observation> observe(std::span<const policy::StoragePath> policies);

  // observe + plan in batches of EngineOptions::observe_batch guests (a guest's policies share a
  // batch): one list call in all, then per batch its config reads (while its facts run) and its
  // plans, handed to `take` by policy index. Observations are dropped as soon as planned.
  using PlanSink = std::function<void(std::size_t index, plan::PolicyPlan&& plan)>;
  void observe_and_plan(std::span<const policy::StoragePath> policies, const plan::PlanningContext& planning,
                        const PlanSink& take);

  // The running state the listing gave is pvestatd's last broadcast (every 10 s; `unknown` with
  // no sample: pve-manager PVE/API2/Cluster.pm resources, PVE/Service/pvestatd.pm): a VM started
  // seconds ago is listed stopped, one just stopped running. The VMs whose plan depends on it (a
  // NIC step: hot-plug or reboot; or a VM the listing says is not running) are read live
  // (status/current, one read each, in parallel) and re-planned. Converged running VMs cost
  // nothing more. plans[i] belongs to policies[i] and observed[i].
  void live_status(std::span<const policy::StoragePath* const> policies, std::span<plan::Observation> observed,
                   std::span<plan::PolicyPlan> plans, const plan::PlanningContext& planning);

  // Every converged plan's proof checked from the facts it was planned from (PolicyPlan::passive):
  // what `pathwarden verify` does without a probe, at no extra round trip.
  static void prove_converged(std::span<const plan::Observation> observed, std::span<plan::PolicyPlan> plans);

  // Every converged plan's traffic mark (PolicyPlan::traffic): the NFS connections' counters from
  // its facts and its VM's taps from the node's VM list (one GET /nodes/{node}/qemu?full=1 per node
  // of a batch, sent with the config reads), differenced against the policy's stored mark
  // (PolicyPlan::since_last). No request of its own.
  void mark_traffic(std::span<const plan::Observation> observed, std::span<plan::PolicyPlan> plans);

 private:
  // Status and locks of every guest from one list call, found by vmid.
  struct ListedGuests {
    proxmox::ApiResult<std::vector<proxmox::GuestSummary>> guests;
    std::map<int, const proxmox::GuestSummary*> by_vmid;
    // The taps and pids of every VM of the run, from one GET /nodes/{node}/qemu?full=1 per node,
    // sent when the run is listed and taken by the first batch that needs them: a converged path's
    // traffic since the last run is judged on them (mark_traffic). Once per run, not per batch:
    // the comparison spans an interval between runs, and the seconds between the taps' read and a
    // later batch's facts are the same at both ends of it.
    std::shared_future<NodeStatuses> taps;
  };
  ListedGuests list_guests(std::span<const policy::StoragePath* const> policies);
  // The VM a policy names, followed to the node the cluster lists it on.
  static proxmox::VmRef ref_of(const ListedGuests& listed, const policy::StoragePath& p);
  std::vector<plan::Observation> observe_listed(const ListedGuests& listed,
                                                std::span<const policy::StoragePath* const> policies);

  const Context& ctx_;
};

}  // namespace pw::reconcile
