// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/observer.hpp"

#include <algorithm>
#include <future>
#include <set>

#include "diagnostics/stop_signals_blocked.hpp"
#include "journal/clock.hpp"
#include "plan/guest_writes.hpp"
#include "plan/names.hpp"
#include "reconcile/evidence.hpp"
#include "reconcile/traffic_marks.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {
namespace {

// A VM's config as in effect, from GET .../pending (one read gives values, pending and digest).
proxmox::VmConfig config_from_pending(const proxmox::PendingConfig& p) {
  proxmox::VmConfig c;
  c.ref = p.ref;
  c.digest = p.digest;
  for (const auto& item : p.items) {
    if (item.value) c.entries.emplace_back(item.key, *item.value);
  }
  return c;
}

}  // namespace

Observer::ListedGuests Observer::list_guests(std::span<const policy::StoragePath* const> policies) {
  ListedGuests l{ctx_.deps.api.list_guests(), {}, {}};
  if (l.guests) {
    for (const auto& g : *l.guests) l.by_vmid.emplace(g.ref.vmid, &g);
  }
  std::vector<proxmox::VmRef> vms;
  vms.reserve(policies.size());
  for (const auto* p : policies) vms.push_back(ref_of(l, *p));
  const StopSignalsBlocked blocked;  // the stop signals are the main thread's (diagnostics/stop_signals_blocked.hpp)
  l.taps = std::async(std::launch::async, [&api = ctx_.deps.api, vms = std::move(vms)] {
             return read_node_statuses(api, vms);
           }).share();
  return l;
}

proxmox::VmRef Observer::ref_of(const ListedGuests& listed, const policy::StoragePath& p) {
  proxmox::VmRef ref{p.guest.node, p.guest.vmid};
  // A VM migrated since the policy was written is followed to the node the cluster lists it on
  // (the request would otherwise go to the old node, which no longer has its config).
  if (listed.guests) {
    if (auto g = listed.by_vmid.find(ref.vmid);
        g != listed.by_vmid.end() && g->second->type == proxmox::GuestType::qemu && !g->second->ref.node.empty()) {
      ref.node = g->second->ref.node;
    }
  }
  return ref;
}

std::vector<plan::Observation> Observer::observe(std::span<const policy::StoragePath> policies) {
  std::vector<const policy::StoragePath*> all;
  all.reserve(policies.size());
  std::set<std::string_view> hosts;
  for (const auto& p : policies) {
    all.push_back(&p);
    hosts.insert(p.guest.host);
  }
  ctx_.progress(Activity::observe, "", "observing guests", 0, hosts.size());
  auto out = observe_listed(list_guests(all), all);
  ctx_.progress(Activity::observe, "", "observing guests", hosts.size(), hosts.size());
  return out;
}

std::vector<plan::Observation> Observer::observe_listed(const ListedGuests& listed,
                                                        std::span<const policy::StoragePath* const> policies) {
  std::vector<plan::Observation> out(policies.size());
  std::vector<proxmox::VmRef> vms;
  std::vector<std::string> hosts;
  std::map<proxmox::VmRef, std::size_t> vm_index;  // not a search per policy: 10,000 VMs stay cheap
  std::set<std::string_view> seen_hosts;
  std::vector<std::size_t> vm_of(policies.size());
  guest::FactsRequests names;  // a NAS given by name (resolved by the guest), Docker's volumes
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = *policies[i];
    const proxmox::VmRef ref = ref_of(listed, p);
    auto [it, added] = vm_index.try_emplace(ref, vms.size());
    if (added) vms.push_back(ref);
    vm_of[i] = it->second;
    if (seen_hosts.insert(p.guest.host).second) hosts.push_back(p.guest.host);
    for (auto& name : plan::names_to_resolve(p)) {
      auto& asked = names[p.guest.host].names;
      if (std::find(asked.begin(), asked.end(), name) == asked.end()) asked.push_back(std::move(name));
    }
    // The path MTU toward the NAS (plan/mtu_checks.cpp): the guest measures it only when the
    // route's interface is above 1500, so most guests pay nothing for it.
    auto& probed = names[p.guest.host].path_mtu;
    if (std::find(probed.begin(), probed.end(), p.mount.server) == probed.end()) probed.push_back(p.mount.server);
    if (p.mount.owner == policy::MountOwner::compose) names[p.guest.host].docker_volumes = true;
    // The guest's VM, for a port that reads it through the guest agent: the first policy's (one
    // guest is one VM; policies that disagree are not both right, and each is checked on its own VM).
    if (!names[p.guest.host].vm) names[p.guest.host].vm = ref;
  }
  // One config read per VM (/pending holds the values in effect, the pending ones and the
  // digest) while the guests' facts are gathered: the two wait on different machines. The facts,
  // the big part, are parsed on this thread, so every batch reuses the same heap.
  auto pendings_future = [&] {
    const StopSignalsBlocked blocked;  // the stop signals are the main thread's (diagnostics/stop_signals_blocked.hpp)
    return std::async(std::launch::async, [&] { return ctx_.deps.api.read_pendings(vms); });
  }();
  auto facts = ctx_.deps.guests.gather_facts(hosts, names);
  auto pendings = pendings_future.get();
  const NodeStatuses& taps = listed.taps.get();  // sent with the listing, once per run
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = *policies[i];
    auto& o = out[i];
    const proxmox::VmRef& ref = vms[vm_of[i]];
    auto& pending = pendings[vm_of[i]];
    if (!listed.guests) {
      o.api_error = Error{describe(listed.guests.error()), listed.guests.error().where, {}};
    } else if (!pending) {
      o.api_error = Error{describe(pending.error()), ref.to_string(), {}};
    } else {
      plan::ObservedVm vm;
      vm.pending = *pending;
      vm.config = config_from_pending(vm.pending);
      vm.status.ref = ref;
      if (auto t = taps.by_vm.find(ref); t != taps.by_vm.end()) {
        vm.status.pid = t->second.pid;
        vm.status.nics = t->second.nics;
        if (vm.status.nics.empty()) {
          vm.taps_unavailable = "Proxmox sent no tap counters (\"nics\") for " + ref.to_string() +
                                (t->second.status == "running" ? "" : " (" + t->second.status + ")");
        }
      } else if (auto f = taps.failed.find(ref.node); f != taps.failed.end()) {
        vm.taps_unavailable = "the node's VM list could not be read: " + f->second;
      } else {
        vm.taps_unavailable = ref.to_string() + " is not in its node's VM list";
      }
      if (auto g = listed.by_vmid.find(ref.vmid); g == listed.by_vmid.end()) {
        o.vm_error = Error{"VM " + std::to_string(ref.vmid) + " is not in the cluster",
                           p.position_of("spec.guest.vmid").to_string(), "check spec.guest.vmid"};
      } else {
        const auto& summary = *g->second;
        if (ref.node != p.guest.node) {
          o.warnings.push_back("VM " + std::to_string(ref.vmid) + " runs on node " + ref.node + ", not " +
                               p.guest.node + " as spec.guest.node says (" +
                               p.position_of("spec.guest.node").to_string() + "): migrated? followed to " + ref.node +
                               "; update the policy");
        }
        if (summary.type != proxmox::GuestType::qemu) {
          o.vm_error = Error{"guest " + std::to_string(ref.vmid) + " is an LXC container, not a QEMU VM",
                             p.position_of("spec.guest.vmid").to_string(), "pathwarden manages QEMU VMs"};
        }
        vm.status.status = summary.status;
        vm.status.lock = summary.lock;
        vm.status.name = summary.name;
      }
      if (!o.vm_error) o.vm = std::move(vm);
    }
    auto fi = facts.find(p.guest.host);
    if (fi == facts.end()) {
      o.guest_error = Error{"no facts came back", p.guest.host, {}};
    } else if (!fi->second) {
      o.guest_error = fi->second.error().error;
    } else {
      o.guest = *fi->second;
      // Docker not answering is "could not observe" for a policy on a Compose volume, never drift.
      if (p.mount.owner == policy::MountOwner::compose && o.guest->docker && !*o.guest->docker) {
        o.guest_error = o.guest->docker->error();
      }
    }
  }
  return out;
}

void Observer::observe_and_plan(std::span<const policy::StoragePath> policies, const plan::PlanningContext& planning,
                                const PlanSink& take) {
  // Whole guests per batch, in the order they first appear: a guest's facts are gathered once.
  std::vector<std::vector<std::size_t>> by_host;
  std::map<std::string_view, std::size_t> host_slot;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    auto [it, added] = host_slot.try_emplace(policies[i].guest.host, by_host.size());
    if (added) by_host.emplace_back();
    by_host[it->second].push_back(i);
  }
  host_slot.clear();
  std::vector<const policy::StoragePath*> all;
  all.reserve(policies.size());
  for (const auto& p : policies) all.push_back(&p);
  const auto listed = list_guests(all);
  all = {};
  const std::size_t per_batch = std::max<std::size_t>(1, ctx_.options.observe_batch);
  for (std::size_t first = 0; first < by_host.size(); first += per_batch) {
    ctx_.progress(Activity::observe, "", "observing guests", first, by_host.size());
    std::vector<std::size_t> indices;
    for (std::size_t h = first; h < std::min(by_host.size(), first + per_batch); ++h) {
      indices.insert(indices.end(), by_host[h].begin(), by_host[h].end());
    }
    std::vector<const policy::StoragePath*> batch;
    batch.reserve(indices.size());
    for (auto i : indices) batch.push_back(&policies[i]);
    if (const int sig = ctx_.stop_signal()) {
      // A safe point between batches: the rest is left unobserved (nothing was changed yet).
      for (std::size_t k = 0; k < indices.size(); ++k) {
        plan::Observation o;
        o.api_error = Error{"not observed: the run was stopped by " + report::signal_name(sig), {}, {}};
        take(indices[k], plan::plan_policy(*batch[k], o, planning));
      }
      continue;
    }
    auto observed = observe_listed(listed, batch);
    std::vector<plan::PolicyPlan> plans;
    plans.reserve(indices.size());
    for (std::size_t k = 0; k < indices.size(); ++k)
      plans.push_back(plan::plan_policy(*batch[k], observed[k], planning));
    live_status(batch, observed, plans, planning);
    plan::merge_guest_writes(plans);  // a batch holds whole guests: each guest's policies make one write
    prove_converged(observed, plans);
    mark_traffic(observed, plans);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      take(indices[k], std::move(plans[k]));
      observed[k] = {};  // the facts of a guest are the big part: drop them as soon as planned
    }
  }
  ctx_.progress(Activity::observe, "", "observing guests", by_host.size(), by_host.size());
}

void Observer::prove_converged(std::span<const plan::Observation> observed, std::span<plan::PolicyPlan> plans) {
  for (std::size_t i = 0; i < plans.size() && i < observed.size(); ++i) {
    if (plans[i].proof && observed[i].guest) {
      plans[i].passive = verify::verify_path(audit_input(*plans[i].proof, *observed[i].guest));
    }
  }
}

void Observer::mark_traffic(std::span<const plan::Observation> observed, std::span<plan::PolicyPlan> plans) {
  const std::string now = journal::format_utc(ctx_.deps.clock.now());
  for (std::size_t i = 0; i < plans.size() && i < observed.size(); ++i) {
    auto& p = plans[i];
    if (!p.proof || !observed[i].guest) continue;
    const auto& vm = observed[i].vm;
    std::string missing = p.proof->vm.vmid == 0 || !p.proof->nic ? "the plan names no Proxmox NIC"
                          : !vm                                  ? "the VM was not observed"
                                                                 : vm->taps_unavailable;
    const proxmox::VmStatus* status = missing.empty() ? &vm->status : nullptr;
    p.traffic = mark_of(*p.proof, *observed[i].guest, vm ? &vm->config : nullptr, status, std::move(missing), now);
    if (auto before = stored_mark(ctx_.deps.results, p.policy)) {
      const auto in = audit_input(*p.proof, *observed[i].guest);
      p.since_last =
          verify::traffic_since(*before, *p.traffic, in.desired, in.evidence, p.proof->nic.value_or(-1), in.settings);
    }
  }
}

void Observer::live_status(std::span<const policy::StoragePath* const> policies, std::span<plan::Observation> observed,
                           std::span<plan::PolicyPlan> plans, const plan::PlanningContext& planning) {
  std::vector<std::size_t> which;
  std::vector<std::size_t> vm_of;
  std::vector<proxmox::VmRef> vms;  // each once: a VM's policies share its read
  for (std::size_t i = 0; i < plans.size() && i < observed.size(); ++i) {
    if (!observed[i].vm) continue;
    const bool nic_step = std::any_of(plans[i].steps.begin(), plans[i].steps.end(), [](const plan::Step& s) {
      return std::holds_alternative<plan::SetNic>(s.action) || std::holds_alternative<plan::RestartVm>(s.action);
    });
    if (!nic_step && observed[i].vm->status.status == "running") continue;
    const auto& ref = observed[i].vm->config.ref;
    auto at = std::find(vms.begin(), vms.end(), ref);
    if (at == vms.end()) at = vms.insert(vms.end(), ref);
    which.push_back(i);
    vm_of.push_back(static_cast<std::size_t>(at - vms.begin()));
  }
  if (which.empty()) return;
  auto live = ctx_.deps.api.vm_statuses(vms);
  for (std::size_t k = 0; k < which.size(); ++k) {
    const std::size_t i = which[k];
    if (vm_of[k] >= live.size() || !live[vm_of[k]]) continue;  // the listing's state stands; the write re-reads it
    const auto& now = *live[vm_of[k]];
    auto& status = observed[i].vm->status;
    if (now.status == status.status && now.lock == status.lock) continue;
    observed[i].warnings.push_back("VM " + std::to_string(status.ref.vmid) + " is " + now.status +
                                   " (status/current), not " + (status.status.empty() ? "unknown" : status.status) +
                                   " as the cluster listing still says: planned with the live state");
    status.status = now.status;
    status.lock = now.lock;
    plans[i] = plan::plan_policy(*policies[i], observed[i], planning);
  }
}

}  // namespace pw::reconcile
